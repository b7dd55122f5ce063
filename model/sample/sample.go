// Package sample chooses the next token from logits: greedy, or sampled
// with temperature, top-k and top-p from a seeded generator, optionally
// restricted to the tokens a constraint allows.
package sample

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/droidgo/droidgo/model"
)

// ErrNoToken reports that the constraint allowed no token at all.
var ErrNoToken = errors.New("no token allowed")

// Sampler picks tokens. It is not safe for concurrent use.
type Sampler struct {
	cfg  model.Sampling
	rng  *rand.Rand
	cand []cand
}

type cand struct {
	id    int
	logit float32
}

// New returns a sampler. A zero Temperature means greedy decoding (argmax,
// lowest id on ties).
func New(cfg model.Sampling) *Sampler {
	return &Sampler{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))}
}

// firstWindow is how many of the best tokens are ranked before falling back
// to ranking all of them; a constraint nearly always accepts one of these.
const firstWindow = 64

// Pick chooses the next token. allowed, when not nil, is asked about
// candidates in order of decreasing logit and only for as many as needed.
func (s *Sampler) Pick(logits []float32, allowed func(id int) bool) (int, error) {
	if len(logits) == 0 {
		return 0, errors.New("empty logits")
	}
	if s.cfg.Temperature <= 0 {
		if allowed == nil {
			return argmax(logits), nil
		}
		for _, c := range s.ranked(logits, firstWindow) {
			if allowed(c.id) {
				return c.id, nil
			}
		}
		if len(logits) <= firstWindow {
			return 0, ErrNoToken
		}
		for _, c := range s.ranked(logits, len(logits))[firstWindow:] {
			if allowed(c.id) {
				return c.id, nil
			}
		}
		return 0, ErrNoToken
	}
	return s.sample(logits, allowed)
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

// ranked returns the n best tokens, best first, ties by lower id.
func (s *Sampler) ranked(logits []float32, n int) []cand {
	n = min(n, len(logits))
	s.cand = s.cand[:0]
	if n > 512 {
		// Insertion into a long buffer costs more than sorting everything.
		for i, v := range logits {
			s.cand = append(s.cand, cand{i, v})
		}
		slices.SortFunc(s.cand, func(a, b cand) int {
			if better(a, b) {
				return -1
			}
			if better(b, a) {
				return 1
			}
			return 0
		})
		return s.cand[:n]
	}
	// Keep the n best in a small sorted buffer; n is small.
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

// sample draws from softmax(logits/T) cut to top-k and top-p, among the
// allowed tokens.
func (s *Sampler) sample(logits []float32, allowed func(int) bool) (int, error) {
	t := float64(s.cfg.Temperature)
	maxL := logits[argmax(logits)]
	weight := func(l float32) float64 { return math.Exp(float64(l-maxL) / t) }
	var total float64
	var c []cand
	if s.cfg.TopK > 0 && s.cfg.TopK < len(logits) {
		c = s.ranked(logits, s.cfg.TopK)
		for _, x := range c {
			total += weight(x.logit)
		}
	} else {
		for _, v := range logits {
			total += weight(v)
		}
	}
	topP := s.cfg.TopP
	if topP <= 0 || topP > 1 {
		topP = 1
	}
	// The nucleus is usually small: rank a window of the best tokens and
	// widen it only if the nucleus does not fit.
	for window := 256; ; window = len(logits) {
		if c == nil || (len(c) < len(logits) && len(c) < window && s.cfg.TopK <= 0) {
			c = s.ranked(logits, window)
		}
		var ids []int
		var probs []float64
		var cum, kept float64
		full := false
		for _, x := range c {
			p := weight(x.logit) / total
			cum += p
			if allowed == nil || allowed(x.id) {
				ids = append(ids, x.id)
				probs = append(probs, p)
				kept += p
			}
			if cum >= topP {
				full = true
				break
			}
		}
		if !full && len(c) < len(logits) && s.cfg.TopK <= 0 {
			c = nil
			continue
		}
		if len(ids) == 0 {
			// The nucleus holds no allowed token: take the best allowed one.
			for _, x := range s.ranked(logits, len(logits)) {
				if allowed(x.id) {
					return x.id, nil
				}
			}
			return 0, ErrNoToken
		}
		r := s.rng.Float64() * kept
		for i, p := range probs {
			if r -= p; r <= 0 {
				return ids[i], nil
			}
		}
		return ids[len(ids)-1], nil
	}
}
