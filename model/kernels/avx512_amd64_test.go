//go:build !purego

package kernels

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
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

// TestPackZ holds the gathering interleavers of the avx512 Q4_K and Q6_K
// prefill to Repack byte for byte, in every weight mode (all scale and
// quant bits), with the last block at the very end of the slice.
func TestPackZ(t *testing.T) {
	needAVX512(t)
	r := rand.New(rand.NewPCG(41, 42))
	for _, c := range []struct {
		typ  quant.Type
		pack func(src *byte, idx *int32, nb int, dst *byte, gstride int)
	}{{quant.Q4_K, q4kPackZ}, {quant.Q6_K, q6kPackZ}} {
		lay := layouts[c.typ]
		for _, mode := range weightModes {
			for _, nb := range []int{1, 3, 8} {
				const rows = 16
				w := makeWeights(r, lay, nb, rows, mode)
				w = w[:len(w):len(w)]
				want := make([]byte, len(w))
				if err := Repack(c.typ, want, w, rows, nb*quant.QK_K); err != nil {
					t.Fatal(err)
				}
				rb := nb * lay.bs
				var idx [16]int32
				for i := range idx {
					idx[i] = int32(i * rb)
				}
				got := make([]byte, len(w))
				c.pack(&w[0], &idx[0], nb, &got[0], Interleave*rb)
				if !bytes.Equal(got, want) {
					t.Errorf("%v %s nb=%d: the pack differs from Repack", c.typ, mode, nb)
				}
			}
		}
	}
}

// TestMissingFeatures checks the reason a CPU without the avx512 level gets:
// every missing feature named, none of the present ones.
func TestMissingFeatures(t *testing.T) {
	for _, c := range []struct {
		fs   []feature
		want string
	}{
		{[]feature{{"AVX512F", true}, {"AVX512_VNNI", true}}, ""},
		{[]feature{{"AVX512F", true}, {"AVX512_VNNI", false}}, "the CPU or OS lacks AVX512_VNNI"},
		{[]feature{{"AVX512F", false}, {"AVX512BW", true}, {"AVX512_VNNI", false}}, "the CPU or OS lacks AVX512F, AVX512_VNNI"},
	} {
		err := missingFeatures(c.fs)
		if got := fmt.Sprint(err); (err == nil) != (c.want == "") || (err != nil && got != c.want) {
			t.Errorf("missingFeatures(%v) = %v, want %q", c.fs, err, c.want)
		}
	}
	if avx512Err == nil && !slices.Contains(Levels(), "avx512") {
		t.Error("avx512Err is nil but the level is not offered")
	}
	if avx512Err != nil && slices.Contains(Levels(), "avx512") {
		t.Errorf("the avx512 level is offered despite %v", avx512Err)
	}
}
