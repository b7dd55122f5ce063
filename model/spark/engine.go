package spark

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync/atomic"

	"github.com/droidgo/droidgo/model/kernels"
	"github.com/droidgo/droidgo/model/quant"
)

// ringSlack is how many positions a sliding layer's ring holds beyond the
// window. It bounds the prefill chunk (a chunk must not overwrite keys its
// own first query still sees) and how far back Truncate can go without
// recomputing.
const ringSlack = 256

func ringSize(window int) int { return window + ringSlack }

// Options configure an Engine. The zero value is the default.
type Options struct {
	// Threads is the number of threads for matrix products and attention
	// (default: DefaultThreads, the physical cores).
	Threads int
	// GELU selects the GELU (default: exact erf, the reference semantics).
	GELU GELUMode
	// FloatActivations computes every product with unrounded float32
	// activations against dequantised weights. The default rounds
	// activations to the weight's dot type like llama.cpp (f16/bf16 for
	// F16/BF16 weights, Q8_0 blocks for Q8_0/Q4_0, Q8_K for K-quants),
	// which integer kernels need.
	FloatActivations bool
	// Batch is the prefill chunk: how many prompt tokens go through each
	// layer together (default kernels.PrefillBatch: 256 with matrix-matrix
	// kernels, 64 without; at most RingSlack+1).
	Batch int
	// MaxContext bounds the number of cached positions (default: the
	// model's context length).
	MaxContext int
	// RingSlack is how many positions the sliding-window layers keep
	// beyond their window (default 256). Truncate and Reuse can cut the
	// cache back by about this many positions without recomputing it; an
	// agent whose prompts change after a long fixed prefix wants more.
	// Memory grows only as positions are used.
	RingSlack int
	// KV is the element type of the KV cache (default f16).
	KV KVType

	// slack overrides RingSlack (tests use tiny rings to exercise wrapping).
	slack int
}

// repackFirstTokens is the prompt length from which Eval waits for a
// pending background repack before prefilling (kernels.PlainBatchSlower):
// on AVX2 the interleaved batched Q4_K kernels are about twice as fast as
// the plain ones, so a prompt that takes several seconds gains more than
// the 1-3 s the repack costs.
const repackFirstTokens = 512

// MaxThreads bounds Options.Threads: each thread is a locked OS thread.
const MaxThreads = 256

type layerKV struct {
	k, v []float32 // f32: [slot][KVHeads*HeadDim]
	// f16: keys [head][slot][dim], values [head][dim][slot] (see kv.go),
	// with room for cap slots
	k16, v16 []byte
	cap      int
	sliding  bool
}

// Engine runs a Model with a KV cache that persists across calls. It
// computes what Reference (reference.go) computes, fused, batched and
// threaded; read that first.
//
// Tokens are appended with Eval (or Prefill, which skips the logits); the
// cache then holds their keys and values and Tokens reports them. A caller
// that re-sends a conversation whose beginning is unchanged calls Reuse (or
// Truncate) first, so only the new suffix is computed. Sliding-window layers
// keep a ring of Window+256 positions, so Truncate can drop up to about 256
// recent positions cheaply; going further back clears the cache.
//
// The engine keeps Options.Threads-1 worker goroutines that poll briefly
// and then park between calls; Close stops them (so does garbage
// collection of an unreachable Engine).
//
// An Engine is not safe for concurrent use.
type Engine struct{ *engine }

// step identifies the fused piece of work a dispatch runs.
type step int

const (
	stepQKV  step = iota // QKV + gate products, RoPE, K/V into the cache
	stepAttn             // attention per (token, head), output gate, encode for attn_output
	stepOut              // attn_output + residual
	stepFFN              // FFN gate + up, GEGLU, encode for ffn_down
	stepDown             // ffn_down + residual
	stepHead             // output head for the wanted positions
	stepTest             // counts chunk runs (pool tests)
)

// dispatch is what the workers read while they run one step: which step on
// which layer for which chunk of tokens, how the step is split, and the
// per-step settings that forward decides before each dispatch. forward
// writes it only between dispatches (the pool's start and finish order the
// writes before the workers' reads), and workers only take chunk numbers
// from next.
type dispatch struct {
	st      step
	layer   int
	b       int // tokens in the chunk
	p0      int // position of the chunk's first token
	nchunks int
	chunk   int // rows per chunk for row-split steps
	next    atomic.Int64
	attKind actKind   // encoding the attention step writes (actF32: none)
	ffKind  actKind   // encoding the FFN step writes (actF32: none)
	logits  []float32 // stepHead: where the logits of the wanted rows go
	counts  []int32   // stepTest
}

type engine struct {
	m    *Model
	c    Config
	opts Options
	pool *pool

	tokens    []int
	kv        []layerKV
	ring      int
	maxCtx    int
	prefilled int64
	// hw is the highest position count ever written; ring slots below
	// hw-ring have been overwritten even if the cache was truncated since.
	hw int
	// floor is the lowest position the sliding rings are known to hold
	// since a Restore (whose state has only the last window).
	floor int

	// per-worker buffers: attention scores and dequantised rows
	scores [][]float32
	rowbuf [][]float32
	q16    [][]float32 // a query rounded to f16
	gsc    [][]float32 // f16 attention: scores of a group of query heads
	enc16  [][]byte    // f16 cache: one value row being stored
	runs   [][2]kvRun
	rowb   []byte // the embedding row of a repacked Embed
	kicked bool   // this engine has let the model's background repack start
	// per-chunk buffers
	x, h, qkv, gate, att, tmp, fg, fu, ff []float32
	inH, inAtt, inFF                      acts
	cosS, sinS, cosF, sinF                []float32
	want                                  []int

	// cur is the dispatch the pool is running or ran last.
	cur dispatch
}

// NewEngine prepares an engine for m.
func NewEngine(m *Model, opts Options) (*Engine, error) {
	c := m.Config
	if opts.Batch <= 0 {
		opts.Batch = kernels.PrefillBatch()
	}
	if opts.Threads < 0 || opts.Threads > MaxThreads {
		return nil, fmt.Errorf("threads must be between 1 and %d, not %d", MaxThreads, opts.Threads)
	}
	if opts.slack <= 0 {
		opts.slack = opts.RingSlack
	}
	if opts.slack <= 0 {
		opts.slack = ringSlack
	}
	opts.Batch = min(opts.Batch, opts.slack+1)
	p := newPool(opts.Threads)
	opts.Threads = p.threads
	e := &engine{m: m, c: c, opts: opts, pool: p, ring: c.Window + opts.slack}
	e.maxCtx = c.Context
	if opts.MaxContext > 0 {
		e.maxCtx = opts.MaxContext
	}
	if e.maxCtx <= 0 {
		e.maxCtx = 1 << 20
	}
	e.kv = make([]layerKV, c.Layers)
	for i := range e.kv {
		e.kv[i].sliding = c.Sliding[i]
	}
	width := max(c.Hidden, c.FFN, c.QDim())
	e.scores = make([][]float32, p.threads)
	e.rowbuf = make([][]float32, p.threads)
	e.q16 = make([][]float32, p.threads)
	e.gsc = make([][]float32, p.threads)
	e.enc16 = make([][]byte, p.threads)
	e.runs = make([][2]kvRun, p.threads)
	for i := range e.scores {
		e.scores[i] = make([]float32, min(e.maxCtx, 4096))
		e.rowbuf[i] = make([]float32, width)
		g := max(1, c.Heads/max(1, c.KVHeads))
		e.q16[i] = make([]float32, attnGroup*g*c.HeadDim)
		e.gsc[i] = make([]float32, g*min(e.maxCtx, 4096))
		e.enc16[i] = make([]byte, 2*c.HeadDim)
	}
	E := &Engine{e}
	runtime.AddCleanup(E, func(p *pool) { p.stop() }, p)
	return E, nil
}

// Close stops the engine's worker goroutines. The engine must not be used
// afterwards.
func (e *Engine) Close() { e.pool.stop() }

// Threads returns the number of threads the engine computes with.
func (e *Engine) Threads() int { return e.pool.threads }

// Model returns the engine's model.
func (e *Engine) Model() *Model { return e.m }

// Tokens returns the tokens whose keys and values are cached, in order.
func (e *Engine) Tokens() []int { return append([]int(nil), e.tokens...) }

// Len returns the number of cached positions.
func (e *Engine) Len() int { return len(e.tokens) }

// Prefilled returns how many tokens the engine has computed in total since
// it was created (cache hits are not counted).
func (e *Engine) Prefilled() int64 { return e.prefilled }

// Reset clears the cache.
func (e *Engine) Reset() { e.tokens, e.hw, e.floor = e.tokens[:0], 0, 0 }

// KV returns the element type of the KV cache.
func (e *Engine) KV() KVType { return e.opts.KV }

// Numerics describes everything about the engine besides the model that
// changes the numbers it computes, for keys of cached results.
// The weights' layout is part of it: the interleaved kernels of a repacked
// model sum in another order than the file layout's. It is only stable
// between Evals (each Eval may install repacked matrices first).
func (e *Engine) Numerics() string {
	layout := "file"
	if e.interleaved() {
		layout = "x8"
	}
	return fmt.Sprintf("kv=%s gelu=%s float=%v batch=%d isa=%s layout=%s", e.opts.KV, e.opts.GELU, e.opts.FloatActivations, e.opts.Batch, kernels.ISA(), layout)
}

// interleaved reports whether any weight is in the interleaved layout.
func (e *engine) interleaved() bool {
	if e.m.Output.x8 {
		return true
	}
	for i := range e.m.Layers {
		L := &e.m.Layers[i]
		for _, w := range []*Weight{&L.QKV, &L.Gate, &L.Out, &L.FFNGate, &L.FFNUp, &L.FFNDown} {
			if w.x8 {
				return true
			}
		}
	}
	return false
}

// canKeep reports whether the first n cached positions can be kept without
// recomputation: every sliding layer must still hold the keys that
// position n would see.
func (e *Engine) canKeep(n int) bool {
	if n == 0 || n == len(e.tokens) {
		return true
	}
	oldest := max(len(e.tokens), e.hw) - e.ring // positions below this were overwritten
	oldest = max(oldest, e.floor)
	return max(0, n-e.c.Window+1) >= oldest
}

// Truncate drops cached positions from n on. It returns how many positions
// remain: n, or 0 if the sliding-window rings no longer hold what position
// n needs (then the cache is cleared).
func (e *Engine) Truncate(n int) int {
	n = max(0, min(n, len(e.tokens)))
	if !e.canKeep(n) {
		e.Reset()
		return 0
	}
	e.tokens = e.tokens[:n]
	return n
}

// Reuse keeps the longest cached prefix shared with tokens, but at most
// len(tokens)-1 positions so that evaluating the rest yields logits. It
// returns the number of positions kept; the caller then evaluates
// tokens[kept:].
func (e *Engine) Reuse(tokens []int) int {
	p := 0
	for p < len(e.tokens) && p < len(tokens)-1 && e.tokens[p] == tokens[p] {
		p++
	}
	return e.Truncate(p)
}

// Prefill appends tokens to the cache without computing logits.
func (e *Engine) Prefill(ctx context.Context, tokens []int) error {
	_, err := e.EvalTo(ctx, tokens, LogitsNone, nil)
	return err
}

// LogitsMode selects which positions Eval returns logits for.
type LogitsMode int

const (
	// LogitsLast returns the logits of the last token only.
	LogitsLast LogitsMode = iota
	// LogitsAll returns the logits of every token.
	LogitsAll
	// LogitsNone computes no logits (prefill).
	LogitsNone
)

// Eval appends tokens to the cache and returns logits: Vocab floats for
// LogitsLast, len(tokens)*Vocab (row-major) for LogitsAll, nil for
// LogitsNone. Tokens go through the layers in chunks of Options.Batch. On
// error (including cancellation, checked between layers) the cache keeps
// only the chunks that completed.
func (e *Engine) Eval(ctx context.Context, tokens []int, mode LogitsMode) ([]float32, error) {
	return e.EvalTo(ctx, tokens, mode, nil)
}

// EvalTo is Eval writing the logits into dst when it has the capacity
// (otherwise into a new slice); decode loops pass the previous result back
// so that a token costs no allocation.
func (e *Engine) EvalTo(ctx context.Context, tokens []int, mode LogitsMode, dst []float32) ([]float32, error) {
	V := e.c.Vocab
	for _, t := range tokens {
		if t < 0 || t >= V {
			return nil, fmt.Errorf("token id %d is out of range [0, %d)", t, V)
		}
	}
	if len(e.tokens)+len(tokens) > e.maxCtx {
		return nil, fmt.Errorf("context full: %d cached + %d new tokens exceed %d", len(e.tokens), len(tokens), e.maxCtx)
	}
	var out []float32
	switch mode {
	case LogitsAll:
		out = grow(dst, len(tokens)*V)
	case LogitsLast:
		if len(tokens) == 0 {
			return nil, fmt.Errorf("eval: no tokens to compute logits for")
		}
		out = grow(dst, V)
	}
	if !e.kicked && e.m.rp != nil && len(tokens) >= repackFirstTokens && kernels.PlainBatchSlower() {
		// The first prompt of an agent run is its longest; on a level
		// whose batched kernels are faster on the interleaved layout it
		// is worth waiting for the repack (1-3 s) instead of prefilling
		// it on the plain one. A failed repack leaves the file layout,
		// which still computes the same.
		if err := e.m.WaitRepack(ctx); err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		e.kicked = true
	}
	for start := 0; start < len(tokens); start += e.opts.Batch {
		end := min(len(tokens), start+e.opts.Batch)
		want := e.want[:0] // chunk rows whose logits are needed
		var lg []float32
		switch mode {
		case LogitsAll:
			for i := start; i < end; i++ {
				want = append(want, i-start)
			}
			lg = out[start*V : end*V]
		case LogitsLast:
			if end == len(tokens) {
				want = append(want, end-1-start)
				lg = out
			}
		}
		e.want = want
		e.m.adopt()
		e.m.evalMu.RLock()
		err := e.forward(ctx, tokens[start:end], want, lg)
		e.m.evalMu.RUnlock()
		if e.m.rp != nil && !e.kicked {
			e.m.kickRepack()
			e.kicked = true
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (e *engine) ensureKV(l int, n int) {
	kv := &e.kv[l]
	w := e.c.KVDim()
	slots := n
	if kv.sliding {
		slots = min(n, e.ring)
	}
	if e.opts.KV == KVF16 {
		if kv.cap >= slots {
			return
		}
	} else if len(kv.k) >= slots*w {
		return
	}
	// Grow full-attention caches geometrically (in 256-position pages).
	newSlots := max(slots, len(kv.k)/w*2, 2*kv.cap, 256)
	if kv.sliding {
		newSlots = min(newSlots, e.ring)
	} else {
		newSlots = min(newSlots, e.maxCtx)
	}
	if e.opts.KV == KVF16 {
		e.growF16(kv, newSlots)
		return
	}
	nk := make([]float32, newSlots*w)
	nv := make([]float32, newSlots*w)
	copy(nk, kv.k)
	copy(nv, kv.v)
	kv.k, kv.v = nk, nv
}

func (e *engine) slot(l, pos int) int {
	if e.kv[l].sliding {
		return pos % e.ring
	}
	return pos
}

// slotRuns calls f for the runs of consecutive cache slots that hold the
// n positions from first on (one run, or two where a ring wraps): positions
// first+j .. first+j+m-1 are in slots s .. s+m-1.
func (e *engine) slotRuns(first, n int, f func(j, s, m int)) {
	for j := 0; j < n; {
		s := e.slot(e.cur.layer, first+j)
		m := n - j
		if e.kv[e.cur.layer].sliding {
			m = min(m, e.ring-s)
		}
		f(j, s, m)
		j += m
	}
}

// dispatch runs step st over n chunks on the pool and waits for it.
func (e *engine) dispatch(st step, n int) {
	e.cur.st, e.cur.nchunks = st, n
	e.cur.next.Store(0)
	e.pool.run(e)
}

// rowChunk picks a chunk of rows for a row-split product: about 4 chunks
// per thread so a worker slowed by other load is balanced by the others,
// in multiples of 32 rows.
func (e *engine) rowChunk(rows int) int {
	c := (rows + 4*e.pool.threads - 1) / (4 * e.pool.threads)
	return max(32, (c+31)&^31)
}

// forward runs one chunk of tokens through the model, appends it to the
// cache, and writes the logits of the chunk rows in want to dst.
//
// Per layer there are five dispatches, each fusing what can be done
// without a barrier: (1) QKV and gate products, with RoPE and the cache
// store per head; (2) attention per (token, query head) with the output
// gate and the encoding of that head's slice for attn_output; (3)
// attn_output with the residual add; (4) FFN gate and up over 256-row
// blocks with GEGLU and the encoding of the block for ffn_down; (5)
// ffn_down with the residual add. RMSNorm and the encoding of its result
// run on the calling goroutine in between.
func (e *engine) forward(ctx context.Context, toks []int, want []int, dst []float32) error {
	c := &e.c
	B := len(toks)
	H, F, QD := c.Hidden, c.FFN, c.QDim()
	p0 := len(e.tokens)
	e.cur.b, e.cur.p0 = B, p0
	e.hw = max(e.hw, p0+B)
	e.x = grow(e.x, B*H)
	e.h = grow(e.h, B*H)
	e.qkv = grow(e.qkv, B*c.QKVRows())
	e.gate = grow(e.gate, B*c.Heads)
	e.att = grow(e.att, B*QD)
	e.tmp = grow(e.tmp, B*H)
	e.fg = grow(e.fg, B*F)
	e.fu = grow(e.fu, B*F)
	e.ff = grow(e.ff, B*F)
	e.cosS, e.sinS = grow(e.cosS, B*c.RopeDimsSWA/2), grow(e.sinS, B*c.RopeDimsSWA/2)
	e.cosF, e.sinF = grow(e.cosF, B*c.RopeDimsFull/2), grow(e.sinF, B*c.RopeDimsFull/2)
	for t, tok := range toks {
		if err := quant.DequantizeRow(e.m.Embed.Type, e.m.Embed.rowTo(tok, &e.rowb), e.x[t*H:(t+1)*H]); err != nil {
			return err
		}
		hs, hf := c.RopeDimsSWA/2, c.RopeDimsFull/2
		ropeTable(e.cosS[t*hs:(t+1)*hs], e.sinS[t*hs:(t+1)*hs], p0+t, c.RopeDimsSWA, c.RopeThetaSWA)
		ropeTable(e.cosF[t*hf:(t+1)*hf], e.sinF[t*hf:(t+1)*hf], p0+t, c.RopeDimsFull, c.RopeThetaFull)
	}
	// Scores for the longest span a query of this chunk sees.
	if need := p0 + B; need > len(e.scores[0]) {
		for i := range e.scores {
			e.scores[i] = make([]float32, max(need, 2*len(e.scores[i])))
		}
	}
	eps := float32(c.Eps)
	float := e.opts.FloatActivations
	for l := range e.m.Layers {
		if err := ctx.Err(); err != nil {
			return err
		}
		L := &e.m.Layers[l]
		e.cur.layer = l
		e.ensureKV(l, p0+B)
		for t := 0; t < B; t++ {
			rmsNorm(e.h[t*H:(t+1)*H], e.x[t*H:(t+1)*H], L.AttnNorm, eps)
		}
		e.inH.reset(e.h, B, H)
		if !float {
			e.inH.prepare(L.QKV.Type)
			e.inH.prepare(L.Gate.Type)
		}
		e.dispatch(stepQKV, c.Heads+2*c.KVHeads+1)

		e.inAtt.reset(e.att, B, QD)
		e.cur.attKind = actF32
		if k := kindOf(L.Out.Type); !float && k != actF32 {
			if c.HeadDim%k.blockElems() == 0 {
				e.cur.attKind = k
				e.inAtt.alloc(k)
			}
		}
		if e.opts.KV == KVF16 {
			tg := e.f16Group(&e.kv[e.cur.layer])
			e.dispatch(stepAttn, c.KVHeads*((B+tg-1)/tg))
		} else {
			e.dispatch(stepAttn, B*c.Heads)
		}
		if e.cur.attKind != actF32 {
			e.inAtt.have[e.cur.attKind] = true
		} else if !float {
			e.inAtt.prepare(L.Out.Type)
		}
		e.cur.chunk = e.rowChunk(H)
		e.dispatch(stepOut, (H+e.cur.chunk-1)/e.cur.chunk)

		for t := 0; t < B; t++ {
			rmsNorm(e.h[t*H:(t+1)*H], e.x[t*H:(t+1)*H], L.FFNNorm, eps)
		}
		e.inH.reset(e.h, B, H)
		if !float {
			e.inH.prepare(L.FFNGate.Type)
			e.inH.prepare(L.FFNUp.Type)
		}
		e.inFF.reset(e.ff, B, F)
		e.cur.ffKind = actF32
		if !float {
			e.cur.ffKind = kindOf(L.FFNDown.Type)
			e.inFF.alloc(e.cur.ffKind)
		}
		// 256-row blocks: whole Q8_K blocks of the GEGLU output per chunk.
		e.cur.chunk = quant.QK_K
		e.dispatch(stepFFN, (F+e.cur.chunk-1)/e.cur.chunk)
		if e.cur.ffKind != actF32 {
			e.inFF.have[e.cur.ffKind] = true
		}
		e.cur.chunk = e.rowChunk(H)
		e.dispatch(stepDown, (H+e.cur.chunk-1)/e.cur.chunk)
	}
	e.tokens = append(e.tokens, toks...)
	e.prefilled += int64(B)
	if len(want) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for i, t := range want {
		rmsNorm(e.h[i*H:(i+1)*H], e.x[t*H:(t+1)*H], e.m.OutputNorm, eps)
	}
	e.inH.reset(e.h, len(want), H)
	if !float {
		e.inH.prepare(e.m.Output.Type)
	}
	e.cur.logits = dst[:len(want)*c.Vocab]
	e.cur.chunk = max(256, e.rowChunk(c.Vocab)/8&^31)
	e.dispatch(stepHead, (c.Vocab+e.cur.chunk-1)/e.cur.chunk)
	e.cur.logits = nil
	return nil
}

// work is what every thread runs for a dispatch: it takes chunks of the
// current step from a shared counter until none is left.
func (e *engine) work(w int) {
	for {
		ch := int(e.cur.next.Add(1) - 1)
		if ch >= e.cur.nchunks {
			return
		}
		switch e.cur.st {
		case stepQKV:
			e.doQKV(w, ch)
		case stepAttn:
			e.doAttn(w, ch)
		case stepOut:
			e.doResidual(w, ch, &e.m.Layers[e.cur.layer].Out, &e.inAtt)
		case stepFFN:
			e.doFFN(w, ch)
		case stepDown:
			e.doResidual(w, ch, &e.m.Layers[e.cur.layer].FFNDown, &e.inFF)
		case stepHead:
			r0 := ch * e.cur.chunk
			r1 := min(e.c.Vocab, r0+e.cur.chunk)
			mulRows(&e.m.Output, &e.inH, r0, r1, e.cur.logits, e.c.Vocab, e.opts.FloatActivations, e.rowbuf[w])
		case stepTest:
			atomic.AddInt32(&e.cur.counts[ch], 1)
		}
	}
}

// doQKV computes the rows of one head of the fused QKV product for every
// token (chunk Heads+2*KVHeads is the gate), rotates q and k heads, and
// stores k and v heads in the cache.
func (e *engine) doQKV(w, ch int) {
	c := &e.c
	L := &e.m.Layers[e.cur.layer]
	float := e.opts.FloatActivations
	nh := c.Heads + 2*c.KVHeads
	if ch == nh {
		mulRows(&L.Gate, &e.inH, 0, c.Heads, e.gate, c.Heads, float, e.rowbuf[w])
		return
	}
	hd, rows, QD, KD := c.HeadDim, c.QKVRows(), c.QDim(), c.KVDim()
	mulRows(&L.QKV, &e.inH, ch*hd, (ch+1)*hd, e.qkv, rows, float, e.rowbuf[w])
	kv := &e.kv[e.cur.layer]
	dims, cosT, sinT := c.RopeDimsFull, e.cosF, e.sinF
	if kv.sliding {
		dims, cosT, sinT = c.RopeDimsSWA, e.cosS, e.sinS
	}
	half := dims / 2
	for t := 0; t < e.cur.b; t++ {
		v := e.qkv[t*rows+ch*hd : t*rows+(ch+1)*hd]
		if ch < c.Heads+c.KVHeads {
			ropeNeox(v, cosT[t*half:(t+1)*half], sinT[t*half:(t+1)*half], dims)
		}
		s := e.slot(e.cur.layer, e.cur.p0+t)
		switch off := ch*hd - QD; {
		case off < 0:
		case e.opts.KV == KVF16:
			e.storeF16(w, kv, s, off/hd%c.KVHeads, off >= KD, v)
		case off < KD:
			copy(kv.k[s*KD+off:s*KD+off+hd], v)
		default:
			copy(kv.v[s*KD+off-KD:s*KD+off-KD+hd], v)
		}
	}
}

// doAttn computes one query head of one token (f32 cache; with the f16
// cache, the query heads of one KV head for a group of tokens, f16Group):
// softmax(q.K/sqrt(d)).V over the positions it sees, times its sigmoid
// gate, then encodes the head's slice for attn_output when heads are whole
// encoding blocks.
func (e *engine) doAttn(w, task int) {
	c := &e.c
	hd, rows, QD, KD := c.HeadDim, c.QKVRows(), c.QDim(), c.KVDim()
	kv := &e.kv[e.cur.layer]
	if e.opts.KV == KVF16 {
		// task is (KV head, group of tokens): the query heads sharing the
		// KV head go together, and the tasks running at the same time read
		// the same head's keys and values.
		tg := e.f16Group(kv)
		ng := (e.cur.b + tg - 1) / tg
		kh, t0 := task/ng, task%ng*tg
		t1 := min(e.cur.b, t0+tg)
		e.attendF16(w, kv, kh, t0, t1)
		g := c.Heads / c.KVHeads
		for t := t0; t < t1; t++ {
			for h := kh * g; h < (kh+1)*g; h++ {
				e.gateHead(t, h, e.att[t*QD+h*hd:t*QD+(h+1)*hd])
			}
		}
		return
	}
	t, h := task/c.Heads, task%c.Heads
	pos := e.cur.p0 + t
	first := 0
	if kv.sliding {
		first = max(0, pos-c.Window+1)
	}
	n := pos - first + 1
	q := e.qkv[t*rows+h*hd : t*rows+(h+1)*hd]
	o := e.att[t*QD+h*hd : t*QD+(h+1)*hd]
	sc := e.scores[w][:n]
	kh := (h / (c.Heads / c.KVHeads)) * hd
	scale := float32(1 / math.Sqrt(float64(hd)))
	e.slotRuns(first, n, func(j, s, m int) {
		kernels.DotRows(q, kv.k[s*KD+kh:], KD, sc[j:j+m])
	})
	mx := float32(math.Inf(-1))
	for j, v := range sc {
		v *= scale
		sc[j] = v
		mx = max(mx, v)
	}
	var sum float64
	for j, v := range sc {
		p := float32(math.Exp(float64(v - mx)))
		sc[j] = p
		sum += float64(p)
	}
	clear(o)
	inv := float32(1 / sum)
	for j := range sc {
		sc[j] *= inv
	}
	e.slotRuns(first, n, func(j, s, m int) {
		kernels.AxpyRows(sc[j:j+m], kv.v[s*KD+kh:], KD, o)
	})
	e.gateHead(t, h, o)
}

// gateHead applies head h's output gate to its attention output o (token
// t) and encodes the head's slice for attn_output when heads are whole
// encoding blocks.
func (e *engine) gateHead(t, h int, o []float32) {
	c := &e.c
	hd := c.HeadDim
	g := sigmoid(e.gate[t*c.Heads+h])
	for i := range o {
		o[i] *= g
	}
	if e.cur.attKind != actF32 {
		e.inAtt.encode(e.cur.attKind, t, h*hd, (h+1)*hd)
	}
}

// doResidual computes a chunk of rows of w for every token and adds them to
// the residual stream.
func (e *engine) doResidual(w, ch int, wt *Weight, a *acts) {
	H := e.c.Hidden
	r0 := ch * e.cur.chunk
	r1 := min(H, r0+e.cur.chunk)
	mulRows(wt, a, r0, r1, e.tmp, H, e.opts.FloatActivations, e.rowbuf[w])
	for t := 0; t < e.cur.b; t++ {
		x, d := e.x[t*H+r0:t*H+r1], e.tmp[t*H+r0:t*H+r1]
		for i := range x {
			x[i] += d[i]
		}
	}
}

// doFFN computes one block of FFN gate and up rows for every token, applies
// GEGLU and encodes the block for ffn_down (the block is whole Q8_K blocks,
// so no other worker's output is needed).
func (e *engine) doFFN(w, ch int) {
	F := e.c.FFN
	L := &e.m.Layers[e.cur.layer]
	r0 := ch * e.cur.chunk
	r1 := min(F, r0+e.cur.chunk)
	float := e.opts.FloatActivations
	mulRows(&L.FFNGate, &e.inH, r0, r1, e.fg, F, float, e.rowbuf[w])
	mulRows(&L.FFNUp, &e.inH, r0, r1, e.fu, F, float, e.rowbuf[w])
	for t := 0; t < e.cur.b; t++ {
		i, j := t*F+r0, t*F+r1
		geglu(e.opts.GELU, e.ff[i:j], e.fg[i:j], e.fu[i:j])
		if e.cur.ffKind != actF32 {
			e.inFF.encode(e.cur.ffKind, t, r0, r1)
		}
	}
}

// Generate greedily extends prompt by n tokens (argmax, lowest id on ties),
// reusing whatever prefix of prompt is cached, and returns the new tokens.
func (e *Engine) Generate(ctx context.Context, prompt []int, n int) ([]int, error) {
	if len(prompt) == 0 {
		return nil, fmt.Errorf("generate: empty prompt")
	}
	kept := e.Reuse(prompt)
	logits, err := e.Eval(ctx, prompt[kept:], LogitsLast)
	if err != nil {
		return nil, err
	}
	var out []int
	for len(out) < n {
		best := 0
		for i, v := range logits {
			if v > logits[best] {
				best = i
			}
		}
		out = append(out, best)
		if len(out) == n {
			break
		}
		if logits, err = e.EvalTo(ctx, []int{best}, LogitsLast, logits); err != nil {
			return out, err
		}
	}
	return out, nil
}
