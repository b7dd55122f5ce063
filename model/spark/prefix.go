package spark

import (
	"errors"
	"fmt"
	"slices"
)

// Prefix is the cached state of a token sequence that any number of
// sequences share read-only (Engine.Fork): the keys and values of every
// position of the full-attention layers, and of the last Window-1
// positions of the sliding-window layers, which is all a continuation
// reads. Eight agents whose prompts start with the same system prompt and
// tool schemas hold that part once.
//
// A Prefix is made from a sequence (Seq.Share) or from a saved State
// (Engine.NewPrefix). One made from a sequence that was itself forked
// keeps reading the older prefix for the full-attention positions before
// its own (a chain, flattened into a copy beyond maxPrefixDepth links).
// Nothing writes to a Prefix once it is made: sequences forked from it
// write their own positions into their own buffers.
type Prefix struct {
	m      *Model
	kvType KVType
	window int
	tokens []int
	parent *Prefix // full-attention positions [0, base)
	base   int
	depth  int     // links to the root of the chain
	full   []kvBuf // per full-attention layer: positions [base, n) at slots 0..
	win    []kvBuf // per sliding layer: positions [winStart, n) at slots 0..
}

// maxPrefixDepth bounds a chain of prefixes: a query walks one run per
// link, and a deeper prefix copies its ancestors' positions instead.
const maxPrefixDepth = 4

// Tokens returns the prefix's tokens.
func (p *Prefix) Tokens() []int { return slices.Clone(p.tokens) }

// Len returns the number of positions of the prefix.
func (p *Prefix) Len() int { return len(p.tokens) }

// Bytes returns the memory of the prefix's own keys and values (not its
// parent's).
func (p *Prefix) Bytes() int64 {
	var n int64
	for i := range p.full {
		n += p.full[i].bytes()
		n += p.win[i].bytes()
	}
	return n
}

func (b *kvBuf) bytes() int64 {
	return int64(4*(len(b.k)+len(b.v)) + len(b.k16) + len(b.v16))
}

// winStart is the first position the sliding layers keep.
func (p *Prefix) winStart() int { return max(0, len(p.tokens)-p.window+1) }

// runs appends the runs of slots holding positions [from, to) of layer l,
// numbered from origin.
func (p *Prefix) runs(l, from, to, origin int, r []kvRun) []kvRun {
	if from >= to {
		return r
	}
	if p.m.Config.Sliding[l] {
		// Queries after the prefix see only its window.
		ws := p.winStart()
		return append(r, kvRun{j: from - origin, s: from - ws, n: to - from, buf: &p.win[l]})
	}
	if from < p.base {
		r = p.parent.runs(l, from, min(to, p.base), origin, r)
		from = p.base
	}
	if from < to {
		r = append(r, kvRun{j: from - origin, s: from - p.base, n: to - from, buf: &p.full[l]})
	}
	return r
}

// locate returns the buffer and slot holding position pos of layer l.
func (p *Prefix) locate(l, pos int) (*kvBuf, int) {
	if p.m.Config.Sliding[l] {
		return &p.win[l], pos - p.winStart()
	}
	if pos < p.base {
		return p.parent.locate(l, pos)
	}
	return &p.full[l], pos - p.base
}

// Share turns the sequence's cached positions into a Prefix and makes the
// sequence a fork of it, so that other sequences can start from the same
// positions without computing them (Engine.Fork). It copies the sequence's
// own keys and values of the full-attention layers and the last window of
// the sliding ones into the prefix (a few tens of MB for a 2k-token prompt
// of the 1.7B); the sequence keeps its buffers for what follows.
func (s *Seq) Share() (*Prefix, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrSeqClosed
	}
	e := s.e
	n := len(s.tokens)
	if n == 0 {
		return nil, errors.New("share: the sequence is empty")
	}
	if n == s.base {
		return s.parent, nil // nothing of its own: the prefix it reads
	}
	// The window of the sliding layers must still be in the rings.
	if oldest := max(max(n, s.hw)-e.ring, s.floor); max(s.base, n-e.c.Window+1) < oldest {
		return nil, fmt.Errorf("share: the sliding-window rings no longer hold positions %d..%d", n-e.c.Window+1, n-1)
	}
	p := &Prefix{m: e.m, kvType: e.opts.KV, window: e.c.Window, tokens: slices.Clone(s.tokens),
		parent: s.parent, base: s.base,
		full: make([]kvBuf, e.c.Layers), win: make([]kvBuf, e.c.Layers)}
	if p.parent != nil {
		p.depth = p.parent.depth + 1
	}
	if p.depth > maxPrefixDepth {
		p.parent, p.base, p.depth = nil, 0, 0
	}
	ws := p.winStart()
	var runs []kvRun
	for l := range e.c.Layers {
		first, dst := p.base, &p.full[l]
		if e.c.Sliding[l] {
			first, dst = ws, &p.win[l]
		}
		e.allocKV(dst, n-first)
		runs = s.runs(l, first, n-first, runs[:0])
		for _, r := range runs {
			e.copySlots(dst, r.j, r.buf, r.s, r.n)
		}
	}
	s.rebase(p)
	return p, nil
}

// NewPrefix makes a Prefix of a saved state, which must fit the engine (KV
// type, shapes, context).
func (e *Engine) NewPrefix(st *State) (*Prefix, error) {
	if err := e.check(st); err != nil {
		return nil, err
	}
	n := len(st.Tokens)
	if n == 0 {
		return nil, errors.New("the state is empty")
	}
	p := &Prefix{m: e.m, kvType: e.opts.KV, window: e.c.Window, tokens: slices.Clone(st.Tokens),
		full: make([]kvBuf, e.c.Layers), win: make([]kvBuf, e.c.Layers)}
	pb := e.posBytes()
	for l := range e.c.Layers {
		first := e.c.stateFirst(l, n)
		dst := &p.full[l]
		if e.c.Sliding[l] {
			dst = &p.win[l]
		}
		e.allocKV(dst, n-first)
		for pos := first; pos < n; pos++ {
			e.writePos(dst, pos-first, st.layers[l][(pos-first)*pb:])
		}
	}
	return p, nil
}

// State returns the prefix as a State (for a prompt cache on disk).
func (p *Prefix) State() *State {
	n := len(p.tokens)
	c := &p.m.Config
	st := &State{Tokens: slices.Clone(p.tokens), KV: p.kvType, layers: make([][]byte, c.Layers)}
	pb := 2 * c.KVDim() * p.kvType.bytes()
	for l := range c.Layers {
		first := c.stateFirst(l, n)
		buf := make([]byte, (n-first)*pb)
		for pos := first; pos < n; pos++ {
			b, s := p.locate(l, pos)
			readSlot(c, p.kvType, b, s, buf[(pos-first)*pb:])
		}
		st.layers[l] = buf
	}
	return st
}
