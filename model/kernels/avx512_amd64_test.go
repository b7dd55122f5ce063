//go:build !purego

package kernels

import (
	"bytes"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/droidgo/droidgo/model/quant"
)

// needAVX512 skips (or, under DROIDGO_REQUIRE_ISA=avx512, fails) a test of
// avx512 internals on a CPU without the level.
func needAVX512(t *testing.T) {
	t.Helper()
	if avx512Err != nil {
		if os.Getenv("DROIDGO_REQUIRE_ISA") == "avx512" {
			t.Fatalf("DROIDGO_REQUIRE_ISA=avx512 but the level is not available: %v", avx512Err)
		}
		t.Skipf("level avx512 NOT tested: %v", avx512Err)
	}
}

// TestQ4KPackZ holds the gathering interleaver of the avx512 Q4_K prefill
// to Repack byte for byte, in every weight mode (all scale and quant bits).
func TestQ4KPackZ(t *testing.T) {
	needAVX512(t)
	r := rand.New(rand.NewPCG(41, 42))
	lay := layouts[quant.Q4_K]
	for _, mode := range weightModes {
		for _, nb := range []int{1, 3, 8} {
			const rows = 16
			w := makeWeights(r, lay, nb, rows, mode)
			want := make([]byte, len(w))
			if err := Repack(quant.Q4_K, want, w, rows, nb*quant.QK_K); err != nil {
				t.Fatal(err)
			}
			rb := nb * quant.BlockQ4_KSize
			var idx [16]int32
			for i := range idx {
				idx[i] = int32(i * rb)
			}
			got := make([]byte, len(w))
			q4kPackZ(&w[0], &idx[0], nb, &got[0], Interleave*rb)
			if !bytes.Equal(got, want) {
				t.Errorf("%s nb=%d: q4kPackZ differs from Repack", mode, nb)
			}
		}
	}
}
