// Package sample chooses the next token from logits: greedy, or sampled
// with temperature, top-k, top-p and min-p from a seeded generator,
// optionally restricted to the tokens a constraint allows.
//
// Nothing here sorts the vocabulary: the best tokens are found by partial
// selection, the top-p nucleus by a quickselect on the weights, and a
// constraint is asked about drawn tokens only (rejection), so a flat
// distribution over 131072 tokens, the worst case, costs a few linear
// passes per token.
package sample

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/droidgo/droidgo/model"
	"github.com/droidgo/droidgo/model/kernels"
)

// ErrNoToken reports that the constraint allowed no token at all.
var ErrNoToken = errors.New("no token allowed")

// Sampler picks tokens. It is not safe for concurrent use.
type Sampler struct {
	cfg  model.Sampling
	rng  *rand.Rand
	cand []cand
	ws   []wcand
	e    []float32 // the weights of every token, before they are ws
}

type cand struct {
	id    int
	logit float32
}

// wcand is a candidate with its unnormalised probability.
type wcand struct {
	id int
	w  float64
}

// New returns a sampler. A zero Temperature means greedy decoding (argmax,
// lowest id on ties).
func New(cfg model.Sampling) *Sampler {
	return &Sampler{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))}
}

// windows are the successive numbers of best tokens ranked while looking
// for an allowed one; a constraint nearly always accepts one of the first.
var windows = []int{64, 1024}

// maxRejects bounds the drawn tokens a constraint may refuse before the
// nucleus is filtered as a whole.
const maxRejects = 64

// Pick chooses the next token. allowed, when not nil, is asked about
// candidates in order of decreasing logit (greedy) or in the order they are
// drawn (sampling), and only for as many as needed.
func (s *Sampler) Pick(logits []float32, allowed func(id int) bool) (int, error) {
	if len(logits) == 0 {
		return 0, errors.New("empty logits")
	}
	if s.cfg.Temperature <= 0 {
		if allowed == nil {
			return argmax(logits), nil
		}
		return s.bestAllowed(logits, allowed)
	}
	return s.sample(logits, allowed)
}

// bestAllowed returns the allowed token with the highest logit (lowest id
// on ties), ranking only as many tokens as it takes.
func (s *Sampler) bestAllowed(logits []float32, allowed func(int) bool) (int, error) {
	done := 0
	for _, w := range append(windows, len(logits)) {
		if done >= len(logits) {
			break
		}
		for _, c := range s.ranked(logits, w)[done:] {
			if allowed(c.id) {
				return c.id, nil
			}
		}
		done = min(w, len(logits))
	}
	return 0, ErrNoToken
}

func argmax(logits []float32) int {
	best := 0
	for i, v := range logits {
		if v > logits[best] {
			best = i
		}
	}
	return best
}

// ranked returns the n best tokens, best first, ties by lower id: a
// bounded insertion for small n, otherwise a selection of the n best
// followed by a sort of those n only.
func (s *Sampler) ranked(logits []float32, n int) []cand {
	n = min(n, len(logits))
	s.cand = s.cand[:0]
	if n > 64 {
		for i, v := range logits {
			s.cand = append(s.cand, cand{i, v})
		}
		selectTop(s.cand, n)
		top := s.cand[:n]
		slices.SortFunc(top, cmpCand)
		return top
	}
	for i, v := range logits {
		c := cand{i, v}
		if len(s.cand) == n && !better(c, s.cand[n-1]) {
			continue
		}
		if len(s.cand) < n {
			s.cand = append(s.cand, c)
		} else {
			s.cand[n-1] = c
		}
		for j := len(s.cand) - 1; j > 0 && better(s.cand[j], s.cand[j-1]); j-- {
			s.cand[j], s.cand[j-1] = s.cand[j-1], s.cand[j]
		}
	}
	return s.cand
}

func better(a, b cand) bool {
	if a.logit != b.logit {
		return a.logit > b.logit
	}
	return a.id < b.id
}

func cmpCand(a, b cand) int {
	switch {
	case better(a, b):
		return -1
	case better(b, a):
		return 1
	}
	return 0
}

// selectTop reorders c so that its n best elements (by better) come first,
// in no particular order: a quickselect, linear on average.
func selectTop(c []cand, n int) {
	lo, hi := 0, len(c) // the n-th best lies in c[lo:hi]
	for hi-lo > 1 {
		p := c[lo+(hi-lo)/2]
		// Partition c[lo:hi] into better than p, then the rest.
		i := lo
		for j := lo; j < hi; j++ {
			if better(c[j], p) {
				c[i], c[j] = c[j], c[i]
				i++
			}
		}
		switch {
		case i == n:
			return
		case i > n:
			hi = i
		default:
			// c[lo:i] are all in; p (present, unique by id) is the next.
			k := i
			for j := i; j < hi; j++ {
				if c[j] == p {
					c[k], c[j] = c[j], c[k]
					break
				}
			}
			if k+1 >= n {
				return
			}
			lo = k + 1
		}
	}
}

// sample draws from softmax(logits/T) cut to top-k, min-p and top-p, among
// the allowed tokens.
func (s *Sampler) sample(logits []float32, allowed func(int) bool) (int, error) {
	t := float64(s.cfg.Temperature)
	best := argmax(logits)
	maxL := logits[best]
	weight := func(l float32) float64 { return math.Exp(float64(l-maxL) / t) }
	s.ws = s.ws[:0]
	if k := s.cfg.TopK; k > 0 && k < len(logits) {
		for _, c := range s.ranked(logits, k) {
			s.ws = append(s.ws, wcand{c.id, weight(c.logit)})
		}
	} else {
		// Every logit's exp at once, vectorised (kernels.ExpSum: float32,
		// within a few ulps of math.Exp, 0 below e^-87): with math.Exp
		// it was half of a flat distribution's 2.5 ms, 8 % of a decoded
		// token on Zen 5.
		s.e = append(s.e[:0], logits...)
		kernels.ExpSum(s.e, float32(1/t), maxL*float32(1/t))
		s.e[best] = 1
		for i, w := range s.e {
			s.ws = append(s.ws, wcand{i, float64(w)})
		}
	}
	if mp := s.cfg.MinP; mp > 0 && mp <= 1 {
		// The best token weighs 1 (logits are shifted by the maximum).
		kept := s.ws[:0]
		for _, c := range s.ws {
			if c.w >= mp {
				kept = append(kept, c)
			}
		}
		s.ws = kept
	}
	var total float64
	for _, c := range s.ws {
		total += c.w
	}
	nucleus := s.ws
	if p := s.cfg.TopP; p > 0 && p < 1 {
		nucleus = nucleusOf(s.ws, p*total)
	}
	var mass float64
	for _, c := range nucleus {
		mass += c.w
	}
	if allowed == nil {
		return draw(s.rng, nucleus, mass), nil
	}
	// Rejection: drawing from the nucleus and refusing what the constraint
	// refuses samples the nucleus renormalised to its allowed tokens, and
	// asks the constraint about a handful of tokens instead of all of them.
	for range maxRejects {
		if mass <= 0 {
			break
		}
		i := drawIndex(s.rng, nucleus, mass)
		if allowed(nucleus[i].id) {
			return nucleus[i].id, nil
		}
		mass -= nucleus[i].w
		nucleus[i].w = 0
	}
	kept := nucleus[:0]
	mass = 0
	for _, c := range nucleus {
		if c.w > 0 && allowed(c.id) {
			kept = append(kept, c)
			mass += c.w
		}
	}
	if len(kept) > 0 && mass > 0 {
		return draw(s.rng, kept, mass), nil
	}
	// The nucleus holds no allowed token: take the best allowed one.
	return s.bestAllowed(logits, allowed)
}

// draw picks a candidate with probability proportional to its weight.
func draw(rng *rand.Rand, c []wcand, mass float64) int {
	return c[drawIndex(rng, c, mass)].id
}

func drawIndex(rng *rand.Rand, c []wcand, mass float64) int {
	r := rng.Float64() * mass
	last := 0
	for i, x := range c {
		if x.w <= 0 {
			continue
		}
		last = i
		if r -= x.w; r < 0 {
			return i
		}
	}
	return last
}

// nucleusOf reorders c and returns its smallest prefix of the heaviest
// candidates (ties by lower id) whose weights reach target: the top-p
// nucleus, found by a quickselect on the weights instead of a sort. The
// cut matches the sorted definition up to the rounding of the sums.
func nucleusOf(c []wcand, target float64) []wcand {
	heavier := func(a, b wcand) bool {
		if a.w != b.w {
			return a.w > b.w
		}
		return a.id < b.id
	}
	lo, hi := 0, len(c) // c[:lo] is in the nucleus, the cut lies in c[lo:hi]
	for lo < hi && target > 0 {
		m := lo + (hi-lo)/2
		p := c[m]
		i := lo
		var sum float64
		for j := lo; j < hi; j++ {
			if heavier(c[j], p) {
				c[i], c[j] = c[j], c[i]
				sum += c[i].w
				i++
			}
		}
		if sum >= target {
			hi = i
			continue
		}
		// Everything heavier than p is in, then p itself.
		for j := i; j < hi; j++ {
			if c[j] == p {
				c[i], c[j] = c[j], c[i]
				break
			}
		}
		target -= sum + p.w
		lo = i + 1
	}
	if lo == 0 && len(c) > 0 {
		lo = 1
	}
	return c[:lo]
}
