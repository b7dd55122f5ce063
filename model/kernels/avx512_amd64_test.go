//go:build !purego

package kernels

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"unsafe"

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

// TestQ80PackX8 holds q80packX8 (the tile of two 8-row groups of the
// interleaved Q8_0 layout) to the packers of the file's layout byte for
// byte: with the VNNI bias against q80packZ, whose scales sit in the tile,
// and unbiased against packQ80 (the AMX B tiles, plain Go), whose scales go
// to their own array. Random bytes: every quant and scale bit pattern.
func TestQ80PackX8(t *testing.T) {
	needAVX512(t)
	r := rand.New(rand.NewPCG(43, 44))
	for _, nb := range []int{8, 16, 72} {
		const rows = 32
		rb := nb * quant.BlockQ8_0Size
		w := make([]byte, rows*rb)
		for i := range w {
			w[i] = byte(r.Uint32())
		}
		x := make([]byte, len(w))
		if err := Repack(quant.Q8_0, x, w, rows, 32*nb); err != nil {
			t.Fatal(err)
		}
		for r0 := 0; r0 < rows; r0 += 16 {
			var idx [16]int32
			for i := range idx {
				idx[i] = int32(i * rb)
			}
			want, got := make([]byte, 576*nb), make([]byte, 576*nb)
			q80packZ(&w[r0*rb], &idx[0], nb, &want[0])
			q80packX8(&x[r0*rb], 8*rb, nb, &got[0], 576, (*float32)(unsafe.Pointer(&got[512])), 576, 0x80808080)
			if !sameScalesAndBytes(got, want) {
				t.Errorf("nb=%d rows %d..: the VNNI tile differs from q80packZ's", nb, r0)
			}
			wpk, wws := make([]byte, 512*nb), make([]float32, 16*nb)
			gpk, gws := make([]byte, 512*nb), make([]float32, 16*nb)
			packQ80(wpk, wws, w[r0*rb:], rb, nb)
			q80packX8(&x[r0*rb], 8*rb, nb, &gpk[0], 512, &gws[0], 64, 0)
			if !bytes.Equal(gpk, wpk) {
				t.Errorf("nb=%d rows %d..: the AMX B tiles differ from packQ80's", nb, r0)
			}
			for i := range wws {
				if !sameFloat(gws[i], wws[i]) {
					t.Fatalf("nb=%d rows %d..: AMX scale %d = %v, want %v", nb, r0, i, gws[i], wws[i])
				}
			}
		}
	}
}

// sameScalesAndBytes compares two q80packZ tiles, whose scales may be NaNs
// with different payloads (random f16 bits) but are otherwise bytes.
func sameScalesAndBytes(a, b []byte) bool {
	for blk := 0; blk < len(a)/576; blk++ {
		o := 576 * blk
		if !bytes.Equal(a[o:o+512], b[o:o+512]) {
			return false
		}
		for i := 0; i < 16; i++ {
			fa := math.Float32frombits(binary.LittleEndian.Uint32(a[o+512+4*i:]))
			fb := math.Float32frombits(binary.LittleEndian.Uint32(b[o+512+4*i:]))
			if !sameFloat(fa, fb) {
				return false
			}
		}
	}
	return true
}

// sameFloat reports whether a and b are the same float, any two NaNs
// alike (their payloads may differ between converters).
func sameFloat(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
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
