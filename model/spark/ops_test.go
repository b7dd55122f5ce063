package spark

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/droidgo/droidgo/model/quant"
)

// The table GEGLU's inline f16 rounding picks the same table entry as
// quant.FP32ToFP16 for every input class: normal halves (incl. rounding ties
// and carries into the exponent), subnormals, the +-10 clamps, zeros, NaN.
func TestGEGLUTableMatchesFP16Rounding(t *testing.T) {
	tab := GELUTableValues()
	xs := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 9.999999, -9.999999, 10, -10, 6.1035156e-05, -6.1035156e-05,
		6.1035153e-05, 5.9604645e-08, 65504, 1e-30, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200000; i++ {
		// random sign and exponent around the interesting range, and
		// mantissas whose low 13 bits sit on or next to a rounding tie
		e := uint32(100 + r.IntN(35))
		m := r.Uint32() & 0x7fffff
		switch i % 4 {
		case 1:
			m = m&^0x1fff | 0x1000
		case 2:
			m |= 0x1fff
		}
		xs = append(xs, math.Float32frombits(r.Uint32()&0x80000000|e<<23|m))
	}
	g := xs
	u := make([]float32, len(xs))
	for i := range u {
		u[i] = 1.5
	}
	y := make([]float32, len(xs))
	geglu(GELUTable, y, g, u)
	for i, x := range xs {
		var want float32
		switch {
		case x <= -10:
			want = 0
		case x >= 10:
			want = x * 1.5
		default:
			want = tab[quant.FP32ToFP16(x)] * 1.5
		}
		if math.Float32bits(y[i]) != math.Float32bits(want) && !(y[i] != y[i] && want != want) {
			t.Fatalf("x=%g (bits %#x): got %g, want %g", x, math.Float32bits(x), y[i], want)
		}
	}
}
