package spark

import (
	"errors"
	"fmt"
	"slices"
	"sync"
)

// kvBuf holds one layer's keys and values for cap consecutive slots.
type kvBuf struct {
	k, v []float32 // f32: [slot][KVHeads*HeadDim]
	// f16: keys [head][slot][dim], values [head][dim][slot] (see kv.go),
	// with room for cap slots
	k16, v16 []byte
	cap      int
}

// layerKV is a sequence's own cache of one layer: linear for full
// attention, a ring of Window+slack slots for a sliding-window layer.
type layerKV struct {
	kvBuf
	sliding bool
}

// kvRun is a run of contiguous cache slots of one buffer: positions j..
// of a query's span at slots s.. of buf, n of them.
type kvRun struct {
	j, s, n int
	buf     *kvBuf
}

// Seq is one token sequence in an Engine: its positions and the keys and
// values of every layer, with rings for the sliding-window layers. Many
// sequences share the engine's weights, threads and scratch; Engine.Step
// computes the new tokens of several of them in one forward pass, and a
// Scheduler does so for sequences driven from different goroutines.
//
// A sequence forked from a Prefix (Engine.Fork) reads the prefix's
// positions from it, read-only, and holds only its own positions after it.
//
// Tokens are appended by Eval-like calls (Engine.Step, Scheduler.Eval, or
// Engine.Eval for the engine's own sequence); Reuse and Truncate cut the
// cache back so that a conversation whose beginning is unchanged only
// computes its new suffix. Sliding-window layers keep a ring of
// Window+RingSlack positions of the sequence's own, so Truncate can drop up
// to about RingSlack recent positions cheaply; going further back clears
// the sequence.
//
// The methods of a Seq may be called from any goroutine, but not while an
// Eval of the sequence is outstanding (Close excepted: it waits for a step
// that computes the sequence to end).
type Seq struct {
	e *engine
	// mu is held by the methods below and by a forward pass that computes
	// the sequence.
	mu     sync.Mutex
	tokens []int
	kv     []layerKV // positions from base on
	// parent holds positions [0, base), read-only; nil when base is 0.
	parent *Prefix
	base   int
	// hw is the highest position count ever written; own ring slots of
	// positions below hw-ring have been overwritten even if the sequence
	// was truncated since.
	hw int
	// floor is the lowest position the sliding rings are known to hold
	// since a Restore (whose state has only the last window).
	floor     int
	prefilled int64
	closed    bool
	logits    []float32 // Scheduler.Eval's logits of the last row
}

// ErrSeqClosed is returned for a sequence used after Close.
var ErrSeqClosed = errors.New("the sequence is closed")

// NewSeq returns an empty sequence of e.
func (e *Engine) NewSeq() *Seq { return e.newSeq() }

func (e *engine) newSeq() *Seq {
	s := &Seq{e: e, kv: make([]layerKV, e.c.Layers)}
	for i := range s.kv {
		s.kv[i].sliding = e.c.Sliding[i]
	}
	return s
}

// Fork returns a new sequence that starts with p's tokens, reading their
// keys and values from p without copying them.
func (e *Engine) Fork(p *Prefix) (*Seq, error) {
	if err := e.compatible(p); err != nil {
		return nil, err
	}
	s := e.newSeq()
	s.rebase(p)
	return s, nil
}

func (e *engine) compatible(p *Prefix) error {
	switch {
	case p == nil:
		return errors.New("fork: no prefix")
	case p.m != e.m:
		return errors.New("fork: the prefix belongs to another model")
	case p.kvType != e.opts.KV:
		return fmt.Errorf("fork: the prefix's KV cache is %s, the engine's %s", p.kvType, e.opts.KV)
	case len(p.tokens) > e.maxCtx:
		return fmt.Errorf("fork: the prefix has %d positions, more than the context of %d", len(p.tokens), e.maxCtx)
	}
	return nil
}

// Rebase makes the sequence a fork of p (as Engine.Fork does), keeping its
// buffers for the positions that follow.
func (s *Seq) Rebase(p *Prefix) error {
	if err := s.e.compatible(p); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrSeqClosed
	}
	s.rebase(p)
	return nil
}

// Parent returns the prefix the sequence was forked from (nil if none).
func (s *Seq) Parent() *Prefix {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.parent
}

// Bytes returns the memory of the sequence's own keys and values (its
// prefix's not counted).
func (s *Seq) Bytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for i := range s.kv {
		n += s.kv[i].bytes()
	}
	return n
}

// rebase makes s hold exactly p's tokens, read from p; s's own buffers are
// kept for reuse.
func (s *Seq) rebase(p *Prefix) {
	n := len(p.tokens)
	s.parent, s.base = p, n
	s.tokens = append(s.tokens[:0], p.tokens...)
	s.hw, s.floor = n, n
}

// Tokens returns the tokens whose keys and values are cached, in order.
func (s *Seq) Tokens() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tokens)
}

// Len returns the number of cached positions.
func (s *Seq) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.tokens)
}

// Prefilled returns how many tokens were computed for the sequence (forked
// and reused positions are not counted).
func (s *Seq) Prefilled() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.prefilled
}

// Shared returns how many of the cached positions are read from the prefix
// the sequence was forked from.
func (s *Seq) Shared() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.base
}

// Reset clears the sequence (and lets go of its prefix).
func (s *Seq) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reset()
}

func (s *Seq) reset() {
	s.tokens, s.hw, s.floor = s.tokens[:0], 0, 0
	s.parent, s.base = nil, 0
}

// Close releases the sequence's memory; it must not be used afterwards.
// It waits for a forward pass that computes the sequence to end.
func (s *Seq) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.reset()
	s.tokens = nil
	for i := range s.kv {
		s.kv[i].kvBuf = kvBuf{}
	}
	if sc := s.e.sched.Load(); sc != nil {
		sc.left(s)
	}
}

// canKeep reports whether the first n cached positions can be kept without
// recomputation: every sliding layer must still hold the keys that
// position n would see (the prefix's window holds the ones before base).
func (s *Seq) canKeep(n int) bool {
	if n == 0 || n == len(s.tokens) {
		return true
	}
	if n < s.base {
		return false
	}
	oldest := max(len(s.tokens), s.hw) - s.e.ring // own positions below this were overwritten
	oldest = max(oldest, s.floor)
	return max(s.base, n-s.e.c.Window+1) >= oldest
}

// Truncate drops cached positions from n on. It returns how many positions
// remain: n, or 0 if the sliding-window rings no longer hold what position
// n needs or n lies inside the prefix the sequence was forked from (then
// the sequence is cleared).
func (s *Seq) Truncate(n int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.truncate(n)
}

func (s *Seq) truncate(n int) int {
	n = max(0, min(n, len(s.tokens)))
	if !s.canKeep(n) {
		s.reset()
		return 0
	}
	s.tokens = s.tokens[:n]
	return n
}

// Reuse keeps the longest cached prefix shared with tokens, but at most
// len(tokens)-1 positions so that evaluating the rest yields logits. It
// returns the number of positions kept; the caller then evaluates
// tokens[kept:].
func (s *Seq) Reuse(tokens []int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.truncate(s.common(tokens))
}

// Common returns how many leading positions Reuse would keep for tokens:
// the longest cached prefix shared with them, at most len(tokens)-1, and
// only as far as the rings still hold what it needs (0 otherwise).
func (s *Seq) Common(tokens []int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.common(tokens)
	if !s.canKeep(n) {
		return 0
	}
	return n
}

func (s *Seq) common(tokens []int) int {
	p := 0
	for p < len(s.tokens) && p < len(tokens)-1 && s.tokens[p] == tokens[p] {
		p++
	}
	return p
}

// ensureKV makes room in layer l for positions up to n (exclusive).
func (s *Seq) ensureKV(l int, n int) {
	e := s.e
	kv := &s.kv[l]
	w := e.c.KVDim()
	slots := n - s.base
	if kv.sliding {
		slots = min(slots, e.ring)
	}
	if e.opts.KV == KVF16 {
		if kv.cap >= slots {
			return
		}
	} else if len(kv.k) >= slots*w {
		return
	}
	// Grow geometrically (in 256-position pages); a ring only grows while
	// it has not wrapped, so its slots are still in position order.
	newSlots := max(slots, len(kv.k)/w*2, 2*kv.cap, 256)
	if kv.sliding {
		newSlots = min(newSlots, e.ring)
	} else {
		newSlots = min(newSlots, e.maxCtx-s.base)
	}
	if e.opts.KV == KVF16 {
		e.growF16(&kv.kvBuf, newSlots)
		return
	}
	nk := make([]float32, newSlots*w)
	nv := make([]float32, newSlots*w)
	copy(nk, kv.k)
	copy(nv, kv.v)
	kv.k, kv.v = nk, nv
}

// slot returns the own slot of position pos (>= base) in layer l.
func (s *Seq) slot(l, pos int) int {
	if s.kv[l].sliding {
		return (pos - s.base) % s.e.ring
	}
	return pos - s.base
}

// runs appends to r the runs of slots that hold the n positions from first
// on in layer l: the prefix's (chained prefixes' for full attention), then
// the sequence's own, split where a ring wraps.
func (s *Seq) runs(l, first, n int, r []kvRun) []kvRun {
	p, end := first, first+n
	if p < s.base {
		r = s.parent.runs(l, p, min(end, s.base), first, r)
		p = s.base
	}
	kv := &s.kv[l]
	for p < end {
		sl := s.slot(l, p)
		m := end - p
		if kv.sliding {
			m = min(m, s.e.ring-sl)
		}
		r = append(r, kvRun{j: p - first, s: sl, n: m, buf: &kv.kvBuf})
		p += m
	}
	return r
}

// locate returns the buffer and slot holding position pos of layer l.
func (s *Seq) locate(l, pos int) (*kvBuf, int) {
	if pos < s.base {
		return s.parent.locate(l, pos)
	}
	return &s.kv[l].kvBuf, s.slot(l, pos)
}
