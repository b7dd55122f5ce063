package sample

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/droidgo/droidgo/model"
)

// sortedNucleus is the textbook top-p: sort by weight (ties by id), take
// the shortest prefix whose weights reach target.
func sortedNucleus(c []wcand, target float64) map[int]bool {
	s := slices.Clone(c)
	slices.SortFunc(s, func(a, b wcand) int {
		switch {
		case a.w > b.w || a.w == b.w && a.id < b.id:
			return -1
		case a.w < b.w || a.w == b.w && a.id > b.id:
			return 1
		}
		return 0
	})
	out := map[int]bool{}
	var cum float64
	for _, x := range s {
		out[x.id] = true
		if cum += x.w; cum >= target {
			break
		}
	}
	return out
}

func TestNucleusMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		n := 1 + rng.IntN(300)
		c := make([]wcand, n)
		var total float64
		for i := range c {
			// Few distinct values, so ties are common.
			c[i] = wcand{i, float64(1 + rng.IntN(8))}
			total += c[i].w
		}
		p := rng.Float64()
		// Stay clear of a cut that float rounding could move.
		target := math.Floor(p*total) + 0.5
		want := sortedNucleus(c, target)
		got := nucleusOf(slices.Clone(c), target)
		if len(got) != len(want) {
			t.Fatalf("trial %d: nucleus of %d, want %d", trial, len(got), len(want))
		}
		for _, x := range got {
			if !want[x.id] {
				t.Fatalf("trial %d: token %d is not in the sorted nucleus", trial, x.id)
			}
		}
	}
}

func TestSelectTopMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 300 {
		n := 1 + rng.IntN(500)
		logits := make([]float32, n)
		for i := range logits {
			logits[i] = float32(rng.IntN(10))
		}
		k := 1 + rng.IntN(n)
		var s Sampler
		got := slices.Clone(s.ranked(logits, k))
		all := make([]cand, n)
		for i, v := range logits {
			all[i] = cand{i, v}
		}
		slices.SortFunc(all, cmpCand)
		if !slices.Equal(got, all[:k]) {
			t.Fatalf("trial %d: top %d of %d differ", trial, k, n)
		}
	}
}

func TestMinP(t *testing.T) {
	// exp(-3) < 0.1: token 2 is cut, the others stay.
	logits := []float32{0, -1, -3}
	s := New(model.Sampling{Temperature: 1, MinP: 0.1, Seed: 5})
	seen := map[int]int{}
	for range 2000 {
		id, err := s.Pick(logits, nil)
		if err != nil {
			t.Fatal(err)
		}
		seen[id]++
	}
	if seen[2] != 0 || seen[0] == 0 || seen[1] == 0 {
		t.Errorf("min-p 0.1 drew %v, want tokens 0 and 1 only", seen)
	}
}

func TestRejectionFallsBackToWholeNucleus(t *testing.T) {
	// Only the least likely token of a flat nucleus is allowed: the
	// rejections run out and the nucleus is filtered as a whole.
	logits := make([]float32, 4096)
	s := New(model.Sampling{Temperature: 1, TopP: 0.99, Seed: 9})
	id, err := s.Pick(logits, func(id int) bool { return id == 4000 })
	if err != nil || id != 4000 {
		t.Fatalf("Pick = %d, %v; want 4000", id, err)
	}
}

// flatLogits is the worst case for top-p: every token in the nucleus.
func flatLogits(n int) []float32 {
	rng := rand.New(rand.NewPCG(7, 8))
	l := make([]float32, n)
	for i := range l {
		l[i] = float32(rng.NormFloat64() * 0.01)
	}
	return l
}

func BenchmarkPickFlat(b *testing.B) {
	logits := flatLogits(131072)
	for _, tc := range []struct {
		name string
		cfg  model.Sampling
	}{
		{"greedy", model.Sampling{}},
		{"top-p0.95", model.Sampling{Temperature: 1, TopP: 0.95, Seed: 1}},
		{"top-k40", model.Sampling{Temperature: 1, TopK: 40, Seed: 1}},
		{"min-p0.05", model.Sampling{Temperature: 1, MinP: 0.05, Seed: 1}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := New(tc.cfg)
			for b.Loop() {
				if _, err := s.Pick(logits, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("top-p0.95-constrained", func(b *testing.B) {
		s := New(model.Sampling{Temperature: 1, TopP: 0.95, Seed: 1})
		for b.Loop() {
			if _, err := s.Pick(logits, func(id int) bool { return id%2 == 0 }); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("greedy-constrained", func(b *testing.B) {
		s := New(model.Sampling{})
		for b.Loop() {
			if _, err := s.Pick(logits, func(id int) bool { return id%1000 == 999 }); err != nil {
				b.Fatal(err)
			}
		}
	})
}
