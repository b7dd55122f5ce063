package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/droidgo/droidgo/model/quant"
)

// TestQuantizeQ8K compares every field of every block bit for bit with the
// reference, on blocks built to hit the edge cases: exact .5 ties, a max
// shared by +v and -v (the first one must win), zero blocks, tiny and huge
// magnitudes, and non-finite blocks (which go to the reference).
func TestQuantizeQ8K(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	gens := map[string]func(x []float32){
		"normal": func(x []float32) {
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
		},
		"ties": func(x []float32) { // iscale = 1: every x is an exact k+0.5
			for i := range x {
				x[i] = float32(r.IntN(253)-126) + 0.5
			}
			x[r.IntN(256)] = -127
		},
		"shared-max": func(x []float32) {
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			i, j := r.IntN(128), 128+r.IntN(128)
			x[i], x[j] = 9, -9
			if r.IntN(2) == 0 {
				x[i], x[j] = -9, 9
			}
		},
		"zero": func(x []float32) { clear(x) },
		"tiny": func(x []float32) {
			for i := range x {
				x[i] = float32(r.NormFloat64()) * 1e-39
			}
		},
		"huge": func(x []float32) {
			for i := range x {
				x[i] = float32(r.NormFloat64()) * 1e37
			}
		},
		"any-scale": func(x []float32) { // magnitudes across the whole float32 range
			sc := float32(math.Pow(10, r.Float64()*76-38))
			for i := range x {
				x[i] = float32(r.NormFloat64()) * sc
			}
		},
		"negative": func(x []float32) { // the max is a min
			for i := range x {
				x[i] = -float32(math.Abs(r.NormFloat64()))
			}
		},
		"inf": func(x []float32) {
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			x[r.IntN(256)] = float32(math.Inf(-1))
		},
		"nan": func(x []float32) { // anywhere in the block, the rest finite
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			x[r.IntN(256)] = float32(math.NaN())
		},
	}
	forEachLevel(t, func(t *testing.T) {
		for name, gen := range gens {
			const nb = 64
			x := make([]float32, nb*256)
			for b := 0; b < nb; b++ {
				gen(x[b*256 : (b+1)*256])
			}
			got := make([]quant.BlockQ8K, nb)
			want := make([]quant.BlockQ8K, nb)
			QuantizeQ8K(x, got)
			quant.QuantizeQ8K(x, want)
			for b := range got {
				g, w := got[b], want[b]
				if math.Float32bits(g.D) != math.Float32bits(w.D) || g.Qs != w.Qs || g.Bsums != w.Bsums {
					t.Errorf("%s block %d: got d=%v qs[:8]=%v bsums[:4]=%v, want d=%v qs[:8]=%v bsums[:4]=%v",
						name, b, g.D, g.Qs[:8], g.Bsums[:4], w.D, w.Qs[:8], w.Bsums[:4])
				}
			}
		}
	})
}
