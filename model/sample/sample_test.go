package sample

import (
	"math"
	"testing"

	"github.com/droidgo/droidgo/model"
)

func TestGreedy(t *testing.T) {
	s := New(model.Sampling{})
	logits := []float32{1, 5, 3, 5, -2}
	if id, _ := s.Pick(logits, nil); id != 1 {
		t.Errorf("argmax = %d, want 1 (lowest id on ties)", id)
	}
	if id, _ := s.Pick(logits, func(i int) bool { return i != 1 }); id != 3 {
		t.Errorf("constrained = %d, want 3", id)
	}
	if id, _ := s.Pick(logits, func(i int) bool { return i == 4 }); id != 4 {
		t.Errorf("only 4 allowed, got %d", id)
	}
	if _, err := s.Pick(logits, func(int) bool { return false }); err != ErrNoToken {
		t.Errorf("nothing allowed: %v", err)
	}
	big := make([]float32, 1000)
	for i := range big {
		big[i] = float32(i % 97)
	}
	// Beyond the first window.
	if id, _ := s.Pick(big, func(i int) bool { return i == 0 }); id != 0 {
		t.Errorf("got %d", id)
	}
}

// The empirical distribution must follow softmax(l/T) restricted to the
// nucleus.
func TestSampledDistribution(t *testing.T) {
	logits := []float32{2, 1, 0, -1, -30}
	cases := []struct {
		name string
		cfg  model.Sampling
		want []float64
	}{
		{"T=1", model.Sampling{Temperature: 1, Seed: 1}, softmax(logits, 1, 5)},
		{"T=0.5 top-k 2", model.Sampling{Temperature: 0.5, TopK: 2, Seed: 2}, softmax(logits, 0.5, 2)},
		{"top-p 0.7", model.Sampling{Temperature: 1, TopP: 0.7, Seed: 3}, softmax(logits, 1, 2)}, // p0=.64 < .7 <= p0+p1
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := New(tc.cfg)
			const n = 40000
			count := make([]float64, len(logits))
			for i := 0; i < n; i++ {
				id, err := s.Pick(logits, nil)
				if err != nil {
					t.Fatal(err)
				}
				count[id]++
			}
			for i, w := range tc.want {
				got := count[i] / n
				if math.Abs(got-w) > 0.015 {
					t.Errorf("token %d: frequency %.3f, want %.3f", i, got, w)
				}
			}
		})
	}
}

// softmax over the first k logits at temperature t, zero elsewhere.
func softmax(l []float32, t float64, k int) []float64 {
	out := make([]float64, len(l))
	var sum float64
	for i := 0; i < k; i++ {
		out[i] = math.Exp(float64(l[i]) / t)
		sum += out[i]
	}
	for i := range out {
		out[i] /= sum
	}
	return out
}

func TestSeedReproducible(t *testing.T) {
	logits := make([]float32, 5000)
	for i := range logits {
		logits[i] = float32(math.Sin(float64(i)))
	}
	draw := func() []int {
		s := New(model.Sampling{Temperature: 1, TopP: 0.95, Seed: 42})
		var out []int
		for i := 0; i < 50; i++ {
			id, _ := s.Pick(logits, nil)
			out = append(out, id)
		}
		return out
	}
	a, b := draw(), draw()
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("same seed, different tokens")
		}
	}
}

func TestSampledRespectsConstraint(t *testing.T) {
	s := New(model.Sampling{Temperature: 1, Seed: 7})
	logits := []float32{5, 4, 3, 2, 1}
	for i := 0; i < 1000; i++ {
		id, err := s.Pick(logits, func(id int) bool { return id%2 == 1 })
		if err != nil || id%2 != 1 {
			t.Fatalf("picked %d (%v)", id, err)
		}
	}
}

func BenchmarkGreedy131k(b *testing.B) {
	logits := make([]float32, 131072)
	for i := range logits {
		logits[i] = float32(math.Sin(float64(i) * 0.37))
	}
	s := New(model.Sampling{})
	for b.Loop() {
		s.Pick(logits, func(id int) bool { return id%3 == 0 })
	}
}

func BenchmarkTopP131k(b *testing.B) {
	logits := make([]float32, 131072)
	for i := range logits {
		logits[i] = float32(math.Sin(float64(i)*0.37)) * 8
	}
	s := New(model.Sampling{Temperature: 1, TopP: 0.95, Seed: 1})
	for b.Loop() {
		s.Pick(logits, nil)
	}
}
