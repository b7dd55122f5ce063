package spark

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/droidgo/droidgo/model/kernels"
)

// KVType is the element type of the KV cache.
type KVType int

const (
	// KVF16 stores keys and values as IEEE halves (the default, like
	// llama.cpp's): half the memory of KVF32. Queries and attention
	// weights are rounded to f16 for the products, as ggml does.
	KVF16 KVType = iota
	// KVF32 stores them as float32.
	KVF32
)

// String returns "f16" or "f32".
func (t KVType) String() string {
	if t == KVF32 {
		return "f32"
	}
	return "f16"
}

// ParseKVType parses "f16" or "f32".
func ParseKVType(s string) (KVType, bool) {
	switch s {
	case "f16":
		return KVF16, true
	case "f32":
		return KVF32, true
	}
	return 0, false
}

// bytes returns the size of one element.
func (t KVType) bytes() int {
	if t == KVF32 {
		return 4
	}
	return 2
}

// KVBytesOf returns the KV cache memory the engine needs for ctx positions
// with elements of type t (sliding layers hold at most their ring).
func (c *Config) KVBytesOf(ctx int, t KVType) int64 {
	return c.kvBytes(ctx, t, ringSize(c.Window))
}

// KVBytes returns the KV cache memory one of the engine's sequences takes
// at ctx positions (with its KV type and its rings).
func (e *Engine) KVBytes(ctx int) int64 { return e.c.kvBytes(ctx, e.opts.KV, e.ring) }

func (c *Config) kvBytes(ctx int, t KVType, ring int) int64 {
	var n int64
	per := int64(2 * c.KVDim() * t.bytes())
	for _, s := range c.Sliding {
		if s {
			n += per * int64(min(ctx, ring))
		} else {
			n += per * int64(ctx)
		}
	}
	return n
}

// The f16 cache is laid out for the kernels: the keys of one KV head are
// consecutive rows ([head][slot][dim]), so the scores of a query are one
// MatVecF16 per contiguous run of slots; the values are transposed
// ([head][dim][slot]), so each output element is a dot product of the
// attention weights with one row.

// growF16 makes room for slots positions in kv's f16 cache, keeping the
// slots it holds.
func (e *engine) growF16(kv *kvBuf, slots int) {
	hd, kvh := e.c.HeadDim, e.c.KVHeads
	old := kv.cap
	nk := make([]byte, kvh*slots*hd*2)
	nv := make([]byte, kvh*hd*slots*2)
	for h := range kvh {
		copy(nk[h*slots*hd*2:], kv.k16[h*old*hd*2:(h+1)*old*hd*2])
		for d := range hd {
			r := h*hd + d
			copy(nv[r*slots*2:], kv.v16[r*old*2:(r+1)*old*2])
		}
	}
	kv.k16, kv.v16, kv.cap = nk, nv, slots
}

// allocKV gives kv room for exactly slots positions (for a prefix).
func (e *engine) allocKV(kv *kvBuf, slots int) {
	if e.opts.KV == KVF16 {
		hd, kvh := e.c.HeadDim, e.c.KVHeads
		kv.k16, kv.v16, kv.cap = make([]byte, kvh*slots*hd*2), make([]byte, kvh*hd*slots*2), slots
		return
	}
	w := e.c.KVDim()
	kv.k, kv.v, kv.cap = make([]float32, slots*w), make([]float32, slots*w), slots
}

// copySlots copies the keys and values of m consecutive slots of src from
// slot ss to dst from slot ds.
func (e *engine) copySlots(dst *kvBuf, ds int, src *kvBuf, ss, m int) {
	if e.opts.KV == KVF32 {
		w := e.c.KVDim()
		copy(dst.k[ds*w:(ds+m)*w], src.k[ss*w:(ss+m)*w])
		copy(dst.v[ds*w:(ds+m)*w], src.v[ss*w:(ss+m)*w])
		return
	}
	hd := e.c.HeadDim
	for h := range e.c.KVHeads {
		copy(dst.k16[(h*dst.cap+ds)*hd*2:(h*dst.cap+ds+m)*hd*2], src.k16[(h*src.cap+ss)*hd*2:(h*src.cap+ss+m)*hd*2])
		for d := range hd {
			r := h*hd + d
			copy(dst.v16[(r*dst.cap+ds)*2:(r*dst.cap+ds+m)*2], src.v16[(r*src.cap+ss)*2:(r*src.cap+ss+m)*2])
		}
	}
}

// storeF16 writes head h's key or value (v: which) at slot s, for worker w.
func (e *engine) storeF16(w int, kv *kvBuf, s, h int, val bool, x []float32) {
	hd := e.c.HeadDim
	if !val {
		kernels.EncodeF16(kv.k16[(h*kv.cap+s)*hd*2:(h*kv.cap+s+1)*hd*2], x)
		return
	}
	// A value goes to one slot of hd rows: encoded at once, then spread.
	enc := e.enc16[w][:2*hd]
	kernels.EncodeF16(enc, x)
	for d := range x {
		i := ((h*hd+d)*kv.cap + s) * 2
		kv.v16[i], kv.v16[i+1] = enc[2*d], enc[2*d+1]
	}
}

// attnGroup is the number of tokens whose queries an f16 attention task
// takes together: their 4 x g query vectors go through one product with
// the keys, and, for the blocks of values they all see, one product with
// the values, so that each key and value is converted from f16 once for
// 16 vectors (kernels.MatMulF16Strided) and, at 2k positions of a full
// layer (2 MiB of one KV head's keys and values), read from beyond L2 once
// per 4 tokens.
const attnGroup = 4

// f16Group returns the tokens per f16 attention task in layer l:
// attnGroup where a token's g query vectors are whole groups of 4 for
// kernels.MatMulF16Strided (then they take the same kernels alone or in a
// group, and a token's result does not depend on the batch it came in),
// else 1. The tokens of a group are consecutive tokens of one sequence.
func (e *engine) f16Group(l int) int {
	if (e.c.Heads/e.c.KVHeads)%4 != 0 {
		return 1
	}
	return attnGroup
}

// attendF16 computes the g query heads that share KV head kh, for rows
// t0..t1-1 of the step, which belong to span sp: the scores of all their
// queries against each run of contiguous key slots of the union of the
// positions they see, in one MatMulF16Strided per run (which converts
// every key once for all queries); softmax of each token's own positions
// (weight 0 elsewhere: the later tokens' positions, and in sliding layers
// the positions before its window); then the outputs as the products of
// the weight vectors with the transposed value rows, block by block.
func (e *engine) attendF16(w int, sp *span, kh, t0, t1 int) {
	c := &e.c
	l := e.cur.layer
	hd, rows, QD := c.HeadDim, c.QKVRows(), c.QDim()
	g := c.Heads / c.KVHeads
	nt := t1 - t0
	G := g * nt // query vectors
	pos := sp.p0 + t1 - 1 - sp.t0
	win := pos + 1 // the positions a token sees: all of them, or its window
	if c.Sliding[l] {
		win = c.Window
	}
	first := max(0, pos-(nt-1)-win+1)
	n := pos - first + 1
	// sees returns the positions token t0+i sees, lo..hi-1 of the n.
	sees := func(i int) (lo, hi int) {
		last := pos - (nt - 1 - i)
		return max(0, last-win+1) - first, last - first + 1
	}
	if need := G * n; len(e.gsc[w]) < need {
		e.gsc[w] = make([]float32, max(need, 2*len(e.gsc[w])))
	}
	sc := e.gsc[w][:G*n] // [token][head][position]
	q := e.q16[w][:G*hd]
	h0 := kh * g
	for i := range nt {
		t := t0 + i
		copy(q[i*g*hd:(i+1)*g*hd], e.qkv[t*rows+h0*hd:t*rows+(h0+g)*hd])
	}
	kernels.RoundF16(q)
	runs := sp.s.runs(l, first, n, e.runs[w][:0])
	e.runs[w] = runs
	for _, r := range runs {
		b := r.buf
		base := kh * b.cap
		kernels.MatMulF16Strided(b.k16[(base+r.s)*hd*2:(base+r.s+r.n)*hd*2], hd, hd, r.n, q, hd, G, sc[r.j:], n, false)
	}
	scale := float32(1 / math.Sqrt(float64(hd)))
	for v := range G {
		row := sc[v*n : (v+1)*n]
		lo, hi := sees(v / g)
		clear(row[:lo])
		softmax(row[lo:hi], scale)
		clear(row[hi:])
	}
	kernels.RoundF16(sc)
	// The outputs, [token][head][dim], go to q (no longer needed) and
	// then to the tokens' rows of att. They are summed block by block of
	// attnBlock positions (aligned to multiples of it), each token's g
	// vectors over its own positions of the block in one product, so a
	// token's sums depend only on its positions: not on the tokens it is
	// grouped with, nor on where the runs of slots begin and end (a ring's
	// wrap, a shared prefix). A block every token of the group sees whole
	// is one product for all G vectors, which gives each vector what it
	// gives alone. A block that spans two runs is gathered first. A
	// block's values (128 KiB at 256 positions) stay in L2 while the
	// group's tokens pass.
	clear(q)
	ri := 0
	for p0 := first; p0 < first+n; {
		p1 := min(first+n, (p0/attnBlock+1)*attnBlock)
		j0, m := p0-first, p1-p0
		for runs[ri].j+runs[ri].n <= j0 {
			ri++
		}
		r := runs[ri]
		var vals []byte
		ws := m
		if j0+m <= r.j+r.n {
			b := r.buf
			vb := kh*hd*b.cap + r.s + j0 - r.j // value row d of the block at vb + d*cap
			vals, ws = b.v16[vb*2:(vb+(hd-1)*b.cap+m)*2], b.cap
		} else {
			vals = e.gatherV(w, runs[ri:], kh, j0, m)
		}
		whole := true
		for i := range nt {
			lo, hi := sees(i)
			whole = whole && lo <= j0 && hi >= j0+m
		}
		if whole {
			kernels.MatMulF16Strided(vals, ws, m, hd, sc[j0:], n, G, q, hd, true)
		} else {
			for i := range nt {
				// Token t0+i's positions a..b-1 of the block; its g weight
				// vectors are sc[(i*g+h)*n:], n apart.
				lo, hi := sees(i)
				a, b := max(lo, j0), min(hi, j0+m)
				if a < b {
					kernels.MatMulF16Strided(vals[2*(a-j0):], ws, b-a, hd, sc[i*g*n+a:], n, g, q[i*g*hd:], hd, true)
				}
			}
		}
		p0 = p1
	}
	for i := range nt {
		t := t0 + i
		copy(e.att[t*QD+h0*hd:t*QD+(h0+g)*hd], q[i*g*hd:(i+1)*g*hd])
	}
}

// attnBlock is the block of positions whose values an f16 attention
// product sums in one go (see attendF16).
const attnBlock = 256

// gatherV copies the value rows of KV head kh for span positions j0..j0+m-1,
// which runs cover (the first of them holding j0), into worker w's scratch
// as hd rows of m slots, and returns it.
func (e *engine) gatherV(w int, runs []kvRun, kh, j0, m int) []byte {
	hd := e.c.HeadDim
	e.vgather[w] = grow(e.vgather[w], hd*m*2)
	dst := e.vgather[w][:hd*m*2]
	for _, r := range runs {
		lo, hi := max(j0, r.j), min(j0+m, r.j+r.n)
		if lo >= hi {
			break
		}
		b := r.buf
		for d := range hd {
			src := (kh*hd+d)*b.cap + r.s + lo - r.j
			copy(dst[(d*m+lo-j0)*2:(d*m+hi-j0)*2], b.v16[src*2:(src+hi-lo)*2])
		}
	}
	return dst
}

// softmax sets row to softmax(scale*row) (kernels.ExpSum: the reference's
// float64 exp, or a float32 one within a few ulps). The maximum is taken
// before scaling (scale > 0, so it is the same element and the same
// product).
func softmax(row []float32, scale float32) {
	mx := kernels.MaxF32(row)
	kernels.Scale(row, float32(1/kernels.ExpSum(row, scale, mx*scale)))
}

// State is the KV cache of a token sequence, enough to resume after it
// without recomputing it: every position of the full-attention layers and
// the last Window-1 positions of the sliding ones. Engine.Save takes one,
// Engine.Restore puts it back; Encode and DecodeState move it to and from
// bytes (a prompt cache on disk).
type State struct {
	Tokens []int
	KV     KVType
	// layers[l] holds, position by position, the K then V rows (all KV
	// heads) in KV's encoding.
	layers [][]byte
}

// stateFirst returns the first position layer l keeps for n tokens.
func (c *Config) stateFirst(l, n int) int {
	if c.Sliding[l] {
		return max(0, n-c.Window+1)
	}
	return 0
}

// posBytes is the size of one position's K and V rows.
func (e *engine) posBytes() int { return 2 * e.c.KVDim() * e.opts.KV.bytes() }

// readSlot writes slot s of b (K then V rows, all KV heads) to dst in the
// encoding of t.
func readSlot(c *Config, t KVType, b *kvBuf, s int, dst []byte) {
	KD, hd := c.KVDim(), c.HeadDim
	if t == KVF32 {
		for i, f := range b.k[s*KD : (s+1)*KD] {
			binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(f))
		}
		for i, f := range b.v[s*KD : (s+1)*KD] {
			binary.LittleEndian.PutUint32(dst[4*(KD+i):], math.Float32bits(f))
		}
		return
	}
	for h := range c.KVHeads {
		copy(dst[h*hd*2:(h+1)*hd*2], b.k16[(h*b.cap+s)*hd*2:(h*b.cap+s+1)*hd*2])
		for d := range hd {
			i := ((h*hd+d)*b.cap + s) * 2
			copy(dst[(KD+h*hd+d)*2:], b.v16[i:i+2])
		}
	}
}

// writePos is the inverse of readSlot for the engine's KV type.
func (e *engine) writePos(b *kvBuf, s int, src []byte) {
	KD, hd := e.c.KVDim(), e.c.HeadDim
	if e.opts.KV == KVF32 {
		for i := range KD {
			b.k[s*KD+i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
			b.v[s*KD+i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*(KD+i):]))
		}
		return
	}
	for h := range e.c.KVHeads {
		copy(b.k16[(h*b.cap+s)*hd*2:(h*b.cap+s+1)*hd*2], src[h*hd*2:(h+1)*hd*2])
		for d := range hd {
			i := ((h*hd+d)*b.cap + s) * 2
			copy(b.v16[i:i+2], src[(KD+h*hd+d)*2:])
		}
	}
}

// Save returns the state of the whole sequence (positions read from its
// prefix included).
func (s *Seq) Save() *State {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.e
	n := len(s.tokens)
	st := &State{Tokens: slices.Clone(s.tokens), KV: e.opts.KV, layers: make([][]byte, e.c.Layers)}
	pb := e.posBytes()
	for l := range e.c.Layers {
		first := e.c.stateFirst(l, n)
		buf := make([]byte, (n-first)*pb)
		for p := first; p < n; p++ {
			b, sl := s.locate(l, p)
			readSlot(&e.c, e.opts.KV, b, sl, buf[(p-first)*pb:])
		}
		st.layers[l] = buf
	}
	return st
}

// Restore replaces the sequence with st. It fails, leaving the sequence as
// it was, if st does not fit the engine (KV type, shapes, context).
func (s *Seq) Restore(st *State) error {
	e := s.e
	if err := e.check(st); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrSeqClosed
	}
	n := len(st.Tokens)
	s.reset()
	pb := e.posBytes()
	for l := range e.c.Layers {
		s.ensureKV(l, n)
		first := e.c.stateFirst(l, n)
		for p := first; p < n; p++ {
			e.writePos(&s.kv[l].kvBuf, s.slot(l, p), st.layers[l][(p-first)*pb:])
		}
	}
	s.tokens = append(s.tokens[:0], st.Tokens...)
	s.hw = n
	// Older ring slots hold whatever was there: nothing before first may
	// be kept by a later Truncate.
	s.floor = max(0, n-e.c.Window+1)
	return nil
}

func (e *engine) check(st *State) error {
	n := len(st.Tokens)
	switch {
	case st.KV != e.opts.KV:
		return fmt.Errorf("the state's KV cache is %s, the engine's %s", st.KV, e.opts.KV)
	case len(st.layers) != e.c.Layers:
		return fmt.Errorf("the state has %d layers, the model %d", len(st.layers), e.c.Layers)
	case n > e.maxCtx:
		return fmt.Errorf("the state has %d positions, more than the context of %d", n, e.maxCtx)
	}
	for _, t := range st.Tokens {
		if t < 0 || t >= e.c.Vocab {
			return fmt.Errorf("the state holds token id %d, out of range [0, %d)", t, e.c.Vocab)
		}
	}
	pb := e.posBytes()
	for l, b := range st.layers {
		if want := (n - e.c.stateFirst(l, n)) * pb; len(b) != want {
			return fmt.Errorf("layer %d of the state has %d bytes, want %d", l, len(b), want)
		}
	}
	return nil
}

// Encode returns the state as bytes: the KV type, the token count, the
// tokens, then each layer's bytes with its length, all little-endian.
func (st *State) Encode() []byte {
	size := 12 + 4*len(st.Tokens)
	for _, b := range st.layers {
		size += 8 + len(b)
	}
	out := make([]byte, 0, size)
	out = binary.LittleEndian.AppendUint32(out, uint32(st.KV))
	out = binary.LittleEndian.AppendUint32(out, uint32(len(st.Tokens)))
	out = binary.LittleEndian.AppendUint32(out, uint32(len(st.layers)))
	for _, t := range st.Tokens {
		out = binary.LittleEndian.AppendUint32(out, uint32(t))
	}
	for _, b := range st.layers {
		out = binary.LittleEndian.AppendUint64(out, uint64(len(b)))
		out = append(out, b...)
	}
	return out
}

// DecodeState parses bytes written by Encode. The layers are views of b.
// Whether the state fits an engine is checked by Restore.
func DecodeState(b []byte) (*State, error) {
	bad := func(what string) (*State, error) { return nil, fmt.Errorf("KV state: %s", what) }
	if len(b) < 12 {
		return bad("truncated header")
	}
	kv := KVType(binary.LittleEndian.Uint32(b))
	n := uint64(binary.LittleEndian.Uint32(b[4:]))
	layers := uint64(binary.LittleEndian.Uint32(b[8:]))
	if kv != KVF16 && kv != KVF32 {
		return bad("unknown KV type")
	}
	b = b[12:]
	if n > uint64(len(b))/4 || layers > 4096 {
		return bad("truncated tokens")
	}
	st := &State{KV: kv, Tokens: make([]int, n), layers: make([][]byte, layers)}
	for i := range st.Tokens {
		st.Tokens[i] = int(binary.LittleEndian.Uint32(b[4*i:]))
	}
	b = b[4*n:]
	for l := range st.layers {
		if len(b) < 8 {
			return bad("truncated layer")
		}
		m := binary.LittleEndian.Uint64(b)
		b = b[8:]
		if m > uint64(len(b)) {
			return bad("truncated layer")
		}
		st.layers[l] = b[:m:m]
		b = b[m:]
	}
	if len(b) != 0 {
		return bad("trailing bytes")
	}
	return st, nil
}
