//go:build !purego

package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/droidgo/droidgo/model/quant"
)

// TestMatVecBF16Bound holds the BFDOT kernels, one token (bf16MV) and 4
// (bf16MVx4), to the error bounds stated at them against the exact dot
// product (float64 sums of the exact products), on positive terms, where
// |exact| is the whole magnitude: a lost or doubled product shows unless
// it is below the bound (at most 1.4e-5 of the sum for one token, 5.0e-5
// for 4), a lost tail or block of products always.
func TestMatVecBF16Bound(t *testing.T) {
	if !hasBF16() {
		t.Skip("no FEAT_BF16 (BFDOT)")
	}
	r := rand.New(rand.NewPCG(51, 52))
	for _, n := range []int{1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 127, 200, 2048, 2053, 6656} {
		const rows, ldo = 3, 5
		w := make([]byte, 1+2*rows*n)[1:] // unaligned rows
		for i := 0; i < rows*n; i++ {
			binary.LittleEndian.PutUint16(w[2*i:], quant.FP32ToBF16(float32(r.ExpFloat64())))
		}
		x := make([]float32, 4*n)
		for i := range x {
			x[i] = float32(r.ExpFloat64())
		}
		quant.RoundBF16(x)
		out1 := make([]float32, rows+1)
		out1[rows] = 42
		bf16MV(w, rows, x[:n], out1)
		out4 := make([]float32, 3*ldo+rows+1)
		for i := range out4 {
			out4[i] = 42
		}
		bf16MVx4(w, n, x, n, n, rows, out4, ldo, false)
		for i := 0; i < rows; i++ {
			for tok := 0; tok < 4; tok++ {
				var exact float64
				for k, v := range x[tok*n : (tok+1)*n] {
					exact += float64(quant.BF16ToFP32(binary.LittleEndian.Uint16(w[2*(i*n+k):]))) * float64(v)
				}
				check := func(kernel string, got float32, units float64) {
					bound := units * 0x1p-23 * exact
					if d := math.Abs(float64(got) - exact); !(d <= bound) {
						t.Errorf("%s n=%d row %d token %d: got %v, exact %v: error %g > bound %g", kernel, n, i, tok, got, exact, d, bound)
					}
				}
				if tok == 0 {
					check("bf16MV", out1[i], float64(n)/64+11)
				}
				check("bf16MVx4", out4[tok*ldo+i], float64(n)/16+5)
			}
		}
		if out1[rows] != 42 {
			t.Errorf("bf16MV n=%d: wrote past rows", n)
		}
		for i, v := range out4 {
			if i%ldo >= rows && v != 42 {
				t.Errorf("bf16MVx4 n=%d: wrote out[%d] outside the 4 x %d outputs", n, i, rows)
			}
		}
	}
}

// TestMatVecBF16Round checks that the BFDOT kernel's activations are
// rounded exactly as quant.FP32ToBF16 rounds them: ties to even, subnormals,
// overflow to infinity, NaNs quieted with their payload's top bits, at every
// position of the 8-wide loop and of the tail.
func TestMatVecBF16Round(t *testing.T) {
	if !hasBF16() {
		t.Skip("no FEAT_BF16 (BFCVTN)")
	}
	bits := []uint32{0, 0x80000000, 1, 0x8000ffff, 0x00008000, 0x00018000, 0x3f808000, 0x3f818000,
		0x3f807fff, 0x3f808001, 0x7f7fffff, 0xff7f8000, 0x7f800000, 0xff800000, 0x7f800001,
		0x7fc00000, 0xffa5a5a5, 0x7fbfffff, 0x007fffff, 0x00800000}
	r := rand.New(rand.NewPCG(53, 54))
	for range 100 {
		bits = append(bits, r.Uint32())
	}
	for _, n := range []int{1, 7, 8, 15, len(bits)} {
		for off := 0; off+n <= len(bits); off += n {
			x := make([]float32, n)
			for i := range x {
				x[i] = math.Float32frombits(bits[off+i])
			}
			y := make([]byte, 2*n+2)
			bf16Round(&x[0], &y[0], n)
			for i, v := range x {
				if got, want := binary.LittleEndian.Uint16(y[2*i:]), quant.FP32ToBF16(v); got != want {
					t.Errorf("%s: bf16 %#04x, want %#04x", fmt.Sprintf("n=%d x[%d]=%#08x", n, i, math.Float32bits(v)), got, want)
				}
			}
			if y[2*n] != 0 || y[2*n+1] != 0 {
				t.Errorf("n=%d: wrote past y", n)
			}
		}
	}
}
