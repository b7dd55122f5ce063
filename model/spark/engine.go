package spark

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync/atomic"

	"github.com/droidgo/droidgo/internal/cpuset"
	"github.com/droidgo/droidgo/model/kernels"
	"github.com/droidgo/droidgo/model/quant"
)

// ringSlack is how many positions a sliding layer's ring holds beyond the
// window. It bounds the prefill chunk (a chunk must not overwrite keys its
// own first query still sees) and how far back Truncate can go without
// recomputing. 512 holds the amx level's chunk (kernels.PrefillBatch); a
// slot costs 2 KiB a sliding layer (f16 K and V): 21 MiB of slack for the
// 1.7B, 10.5 more than at 256.
const ringSlack = 512

// MaxBatch is the largest prefill chunk of an engine with the default
// ring slack (Options.RingSlack unset): a chunk may use all of it plus
// one.
const MaxBatch = ringSlack + 1

func ringSize(window int) int { return window + ringSlack }

// Options configure an Engine. The zero value is the default.
type Options struct {
	// Threads is the number of threads for matrix products and attention
	// (default: len(CPUs) when CPUs is set, else DefaultThreads, the
	// physical cores).
	Threads int
	// CPUs, when set, are the CPUs the threads are pinned to
	// (sched_setaffinity on Linux and Android; see internal/cpuset, which
	// chooses the fastest cores). nil leaves the threads to the scheduler.
	CPUs []int
	// GELU selects the GELU (default: exact erf, the reference semantics).
	GELU GELUMode
	// FloatActivations computes every product with unrounded float32
	// activations against dequantised weights. The default rounds
	// activations to the weight's dot type like llama.cpp (f16/bf16 for
	// F16/BF16 weights, Q8_0 blocks for Q8_0/Q4_0, Q8_K for K-quants),
	// which integer kernels need.
	FloatActivations bool
	// Batch is the prefill chunk: how many prompt tokens go through each
	// layer together (default kernels.PrefillBatch: 512 at the amx level,
	// 256 with other matrix-matrix kernels, 64 without; at most
	// RingSlack+1).
	Batch int
	// MaxContext bounds the number of cached positions (default: the
	// model's context length).
	MaxContext int
	// RingSlack is how many positions the sliding-window layers keep
	// beyond their window (default 512). Truncate and Reuse can cut the
	// cache back by about this many positions without recomputing it; an
	// agent whose prompts change after a long fixed prefix wants more.
	// Memory grows only as positions are used.
	RingSlack int
	// KV is the element type of the KV cache (default f16).
	KV KVType

	// slack overrides RingSlack (tests use tiny rings to exercise wrapping).
	slack int
	// vectorAttention keeps prefill attention off the tiles (tests compare
	// the two paths); tileBudget overrides tileMaxPositions.
	vectorAttention bool
	tileBudget      int
}

// repackFirstTokens is the prompt length from which Eval waits for a
// pending background repack before prefilling (kernels.PlainBatchSlower):
// on AVX2 the interleaved batched Q4_K kernels are about twice as fast as
// the plain ones, so a prompt that takes several seconds gains more than
// the 1-3 s the repack costs.
const repackFirstTokens = 512

// MaxThreads bounds Options.Threads: each thread is a locked OS thread.
const MaxThreads = 256

// Engine runs a Model. It computes what Reference (reference.go) computes,
// fused, batched and threaded; read that first.
//
// An engine holds any number of sequences (Seq: positions and KV cache),
// which share its weights, threads and scratch; Step computes the new
// tokens of several of them in one forward pass (their tokens go through
// the matrix products together, attention runs per sequence), and a
// Scheduler lets goroutines drive their sequences concurrently.
//
// The engine also has a sequence of its own, which the single-sequence
// methods use: tokens are appended with Eval (or Prefill, which skips the
// logits); the cache then holds their keys and values and Tokens reports
// them. A caller that re-sends a conversation whose beginning is unchanged
// calls Reuse (or Truncate) first, so only the new suffix is computed.
// Sliding-window layers keep a ring of Window+256 positions, so Truncate
// can drop up to about 256 recent positions cheaply; going further back
// clears the cache.
//
// A token's logits do not depend on what else is computed with it: which
// other tokens and sequences share its forward pass, how a prompt is split
// into chunks, and whether a token is decoded alone or with a prompt (see
// kernels.BatchInvariant for the instruction-set levels where this holds
// bit for bit).
//
// The engine keeps Options.Threads-1 worker goroutines that poll briefly
// and then park between calls; Close stops them (so does garbage
// collection of an unreachable Engine).
//
// An Engine is not safe for concurrent use (a Scheduler is).
type Engine struct{ *engine }

// step identifies the fused piece of work a dispatch runs.
type step int

const (
	stepQKV  step = iota // QKV + gate products, RoPE, K/V into the cache
	stepPack             // tile attention: convert the KV heads' keys and values a span sees
	stepAttn             // attention per (token, head), output gate, encode for attn_output
	stepOut              // attn_output + residual
	stepFFN              // FFN gate + up, GEGLU, encode for ffn_down
	stepDown             // ffn_down + residual
	stepHead             // output head for the wanted positions
	stepNorm             // RMSNorm of a block of rows and its encodings for the next products
	stepTest             // counts chunk runs (pool tests)
)

// dispatch is what the workers read while they run one step: which step on
// which layer for the rows of the forward pass, how the step is split, and
// the per-step settings that forward decides before each dispatch. forward
// writes it only between dispatches (the pool's start and finish order the
// writes before the workers' reads), and workers only take chunk numbers
// from next.
type dispatch struct {
	st      step
	layer   int
	b       int // rows (tokens) of the forward pass
	nchunks int
	chunk   int // rows per chunk for row-split steps
	next    atomic.Int64
	attKind actKind    // encoding the attention step writes (actF32: none)
	ffKind  actKind    // encoding the FFN step writes (actF32: none)
	logits  []float32  // stepHead: where the logits of the wanted rows go
	norm    []float32  // stepNorm: the norm's weights
	normTo  [2]actKind // stepNorm: the encodings it writes (actF32: none)
	spans   []span     // the sequences' rows of the pass
	counts  []int32    // stepTest
}

// span is one sequence's rows of a forward pass: rows t0..t0+n-1 at
// positions p0.. of sequence s.
type span struct {
	s         *Seq
	t0, n, p0 int
	want      []int     // rows (relative to t0) whose logits are wanted
	dst       []float32 // their logits
}

type engine struct {
	m    *Model
	c    Config
	opts Options
	pool *pool

	seq       *Seq // the single-sequence methods' sequence
	ring      int
	maxCtx    int
	prefilled atomic.Int64
	sched     atomic.Pointer[Scheduler] // the scheduler driving the engine, if any

	// per-worker buffers: attention scores and dequantised rows
	scores [][]float32
	rowbuf [][]float32
	// a block's product rows for every token (doFFN, doResidual): the
	// worker's own, so they stay in its cache from block to block; in
	// pass-wide arrays every block's stores first had to fetch their lines
	blk     [][]float32
	q16     [][]float32 // a query rounded to f16
	gsc     [][]float32 // f16 attention: scores of a group of query heads
	enc16   [][]byte    // f16 cache: one value row being stored
	runs    [][]kvRun
	vgather [][]byte            // f16 attention: values of a block gathered from two runs
	otile   [][]float32         // tile attention: the outputs of a task's query vectors
	hstage  []kernels.HalfStage // tile attention: keys or values on their way to tiles
	rowb    []byte              // the embedding row of a repacked Embed
	kicked  bool                // this engine has let the model's background repack start
	// per-pass buffers
	x, h, qkv, gate, att, ff []float32
	inH, inAtt, inFF         acts
	cosS, sinS, cosF, sinF   []float32
	want                     []int
	tokBuf                   []int
	logitBuf                 []float32
	spans                    []span
	rowSpan                  []int32     // row -> index in spans
	taskEnd                  []int       // attention: tasks of spans[:i+1]
	spanTG                   []int       // f16 attention: tokens per task of each span
	spanTile                 []bool      // tile attention: the spans that take it
	tileIdx                  []int       // ... their indices
	tiles                    []spanTiles // ... their converted keys and values (in tileMem)
	tileMem                  []byte
	one                      [1]span

	// cur is the dispatch the pool is running or ran last.
	cur dispatch

	// takeHook, when set (tests), is called by worker w before it takes a
	// chunk (ch -1) and after (ch is the chunk it took, nchunks or more
	// when none was left), so a test can order and count what each
	// worker takes.
	takeHook func(w, ch int)
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
	for _, c := range opts.CPUs {
		if c < 0 || c >= cpuset.MaxCPU {
			return nil, fmt.Errorf("CPU %d is not a CPU number", c)
		}
	}
	p := newPool(opts.Threads, opts.CPUs)
	opts.Threads = p.threads
	e := &engine{m: m, c: c, opts: opts, pool: p, ring: c.Window + opts.slack}
	e.maxCtx = c.MaxPositions()
	if opts.MaxContext > 0 {
		e.maxCtx = opts.MaxContext
	}
	width := max(c.Hidden, c.FFN, c.QDim())
	e.scores = make([][]float32, p.threads)
	e.rowbuf = make([][]float32, p.threads)
	e.blk = make([][]float32, p.threads)
	e.q16 = make([][]float32, p.threads)
	e.gsc = make([][]float32, p.threads)
	e.enc16 = make([][]byte, p.threads)
	e.runs = make([][]kvRun, p.threads)
	e.vgather = make([][]byte, p.threads)
	e.otile = make([][]float32, p.threads)
	e.hstage = make([]kernels.HalfStage, p.threads)
	for i := range e.scores {
		e.scores[i] = make([]float32, min(e.maxCtx, 4096))
		e.rowbuf[i] = make([]float32, width)
		g := max(1, c.Heads/max(1, c.KVHeads))
		e.q16[i] = make([]float32, max(attnGroup*g, tilePairs*tileQueries)*c.HeadDim)
		if kernels.TileAttention() {
			e.otile[i] = make([]float32, tilePairs*tileQueries*c.HeadDim)
		}
		e.gsc[i] = make([]float32, g*min(e.maxCtx, 4096))
		e.enc16[i] = make([]byte, 2*c.HeadDim)
		e.runs[i] = make([]kvRun, 0, 8)
	}
	e.seq = e.newSeq()
	E := &Engine{e}
	runtime.AddCleanup(E, func(p *pool) { p.stop() }, p)
	return E, nil
}

// Close stops the engine's worker goroutines. The engine must not be used
// afterwards.
func (e *Engine) Close() { e.pool.stop() }

// Threads returns the number of threads the engine computes with.
func (e *Engine) Threads() int { return e.pool.threads }

// CPUs returns the CPUs the engine's threads are pinned to (nil: not
// pinned).
func (e *Engine) CPUs() []int { return e.pool.cpus }

// PinError reports why the threads could not be pinned to CPUs, if they
// could not.
func (e *Engine) PinError() error { return e.pool.PinError() }

// Model returns the engine's model.
func (e *Engine) Model() *Model { return e.m }

// Batch returns the prefill chunk: the most tokens of one sequence a
// forward pass takes (Options.Batch, bounded by the ring slack).
func (e *Engine) Batch() int { return e.opts.Batch }

// MaxContext returns the most positions a sequence may hold.
func (e *Engine) MaxContext() int { return e.maxCtx }

// Tokens returns the tokens the engine's own sequence has cached, in order.
func (e *Engine) Tokens() []int { return e.seq.Tokens() }

// Len returns the number of positions the engine's own sequence has cached.
func (e *Engine) Len() int { return e.seq.Len() }

// Prefilled returns how many tokens the engine has computed in total, for
// all its sequences, since it was created (cache hits are not counted).
func (e *Engine) Prefilled() int64 { return e.prefilled.Load() }

// Reset clears the engine's own sequence.
func (e *Engine) Reset() { e.seq.Reset() }

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

// Truncate drops the engine's own cached positions from n on. It returns
// how many positions remain: n, or 0 if the sliding-window rings no longer
// hold what position n needs (then the cache is cleared).
func (e *Engine) Truncate(n int) int { return e.seq.Truncate(n) }

// Reuse keeps the longest prefix of the engine's own cache shared with
// tokens, but at most len(tokens)-1 positions so that evaluating the rest
// yields logits. It returns the number of positions kept; the caller then
// evaluates tokens[kept:].
func (e *Engine) Reuse(tokens []int) int { return e.seq.Reuse(tokens) }

// Save returns the state of the engine's own sequence.
func (e *Engine) Save() *State { return e.seq.Save() }

// Restore replaces the engine's own sequence with st. It fails, leaving the
// cache as it was, if st does not fit this engine (KV type, shapes,
// context).
func (e *Engine) Restore(st *State) error { return e.seq.Restore(st) }

// Prefill appends tokens to the engine's own sequence without computing
// logits.
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

// Eval appends tokens to the engine's own sequence and returns logits:
// Vocab floats for LogitsLast, len(tokens)*Vocab (row-major) for LogitsAll,
// nil for LogitsNone. Tokens go through the layers in chunks of
// Options.Batch. On error (including cancellation, checked between layers)
// the cache keeps only the chunks that completed.
func (e *Engine) Eval(ctx context.Context, tokens []int, mode LogitsMode) ([]float32, error) {
	return e.EvalTo(ctx, tokens, mode, nil)
}

// EvalTo is Eval writing the logits into dst when it has the capacity
// (otherwise into a new slice); decode loops pass the previous result back
// so that a token costs no allocation.
func (e *Engine) EvalTo(ctx context.Context, tokens []int, mode LogitsMode, dst []float32) ([]float32, error) {
	out, err := e.evalSeq(ctx, e.seq, tokens, mode, dst)
	// The workers stop when the Engine is collected (NewEngine): not
	// while they compute for it.
	runtime.KeepAlive(e)
	return out, err
}

// evalSeq runs tokens of sequence s through the model alone, in chunks.
func (e *engine) evalSeq(ctx context.Context, s *Seq, tokens []int, mode LogitsMode, dst []float32) ([]float32, error) {
	V := e.c.Vocab
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrSeqClosed
	}
	if err := e.validate(s, len(s.tokens), tokens); err != nil {
		return nil, err
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
	if len(tokens) > e.opts.Batch {
		// Room for the whole prompt before its first pass: grown pass by
		// pass, the cache was copied at every doubling.
		for l := range s.kv {
			s.ensureKV(l, len(s.tokens)+len(tokens))
		}
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
		e.one[0] = span{s: s, n: end - start, want: want, dst: lg}
		if err := e.run(ctx, e.one[:], tokens[start:end]); err != nil {
			return nil, err
		}
	}
	e.one[0] = span{}
	return out, nil
}

// validate checks n new tokens for sequence s holding have positions.
func (e *engine) validate(s *Seq, have int, tokens []int) error {
	if s.e != e {
		return errors.New("the sequence belongs to another engine")
	}
	V := e.c.Vocab
	for _, t := range tokens {
		if t < 0 || t >= V {
			return fmt.Errorf("token id %d is out of range [0, %d)", t, V)
		}
	}
	if have+len(tokens) > e.maxCtx {
		return fmt.Errorf("context full: %d cached + %d new tokens exceed %d", have, len(tokens), e.maxCtx)
	}
	return nil
}

// run is one forward pass over the spans (their rows' tokens in toks, in
// span order) with the model's repacked matrices installed first.
func (e *engine) run(ctx context.Context, spans []span, toks []int) error {
	e.m.adopt()
	e.m.evalMu.RLock()
	err := e.forward(ctx, spans, toks)
	e.m.evalMu.RUnlock()
	if e.m.rp != nil && !e.kicked {
		e.m.kickRepack()
		e.kicked = true
	}
	return err
}

// Work is one sequence's part of a Step: its new tokens and which logits
// to compute.
type Work struct {
	Seq    *Seq
	Tokens []int      // at most Engine.Batch of them
	Logits LogitsMode // LogitsLast, LogitsAll or LogitsNone
	// Out receives the logits (Vocab floats per row, as Eval returns
	// them); it is reused when it has the capacity.
	Out []float32
	// Err is set by Step when this work was not computed (a closed
	// sequence, a token out of range, a full context); the others were.
	Err error
}

// Step runs one forward pass over the new tokens of several sequences (at
// most one Work per sequence, each at most Batch tokens): one decode token
// per generating sequence and a chunk of any prompt being prefilled go
// through every matrix product together, which reads each weight once for
// all of them. A token's logits are the same as when its sequence is
// computed alone. A work that cannot be computed gets its Err and is left
// out; an error of the pass itself (ctx ended) extends no sequence.
func (e *Engine) Step(ctx context.Context, works []Work) error {
	V := e.c.Vocab
	e.spans = e.spans[:0]
	defer func() {
		for i := range e.spans {
			e.spans[i].s.mu.Unlock()
			e.spans[i] = span{}
		}
		e.spans = e.spans[:0]
	}()
	want := e.want[:0]
	toks := e.tokBuf[:0]
	for i := range works {
		w := &works[i]
		w.Err = nil
		if w.Err = e.checkWork(w); w.Err != nil {
			continue
		}
		s := w.Seq
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			w.Err = ErrSeqClosed
			continue
		}
		if err := e.validate(s, len(s.tokens), w.Tokens); err != nil {
			s.mu.Unlock()
			w.Err = fmt.Errorf("step: %w", err)
			continue
		}
		e.spans = append(e.spans, span{s: s, n: len(w.Tokens)}) // unlocked by the deferred loop
		sp := &e.spans[len(e.spans)-1]
		w0 := len(want)
		switch w.Logits {
		case LogitsAll:
			for r := range sp.n {
				want = append(want, r)
			}
			w.Out = grow(w.Out, sp.n*V)
		case LogitsLast:
			want = append(want, sp.n-1)
			w.Out = grow(w.Out, V)
		default:
			w.Out = w.Out[:0]
		}
		sp.want, sp.dst = want[w0:], w.Out
		toks = append(toks, w.Tokens...)
	}
	e.want, e.tokBuf = want, toks
	err := e.run(ctx, e.spans, toks)
	runtime.KeepAlive(e)
	return err
}

// checkWork checks what a Step can tell about w without its sequence.
func (e *engine) checkWork(w *Work) error {
	s := w.Seq
	switch {
	case s == nil:
		return errors.New("step: a work without a sequence")
	case s.e != e:
		return errors.New("step: the sequence belongs to another engine")
	case len(w.Tokens) > e.opts.Batch:
		return fmt.Errorf("step: %d tokens for one sequence, more than the chunk of %d", len(w.Tokens), e.opts.Batch)
	case w.Logits == LogitsLast && len(w.Tokens) == 0:
		return errors.New("step: no tokens to compute logits for")
	}
	for j := range e.spans {
		if e.spans[j].s == s {
			return errors.New("step: the sequence appears twice")
		}
	}
	return nil
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

// forward runs one pass of the spans' rows (toks, in span order) through
// the model, appends them to their sequences, and writes the logits of the
// rows each span wants to its dst. The spans' sequences must be locked.
//
// Per layer there are five dispatches, each fusing what can be done
// without a barrier: (1) QKV and gate products, with RoPE and the cache
// store per head; (2) attention per (token, query head) with the output
// gate and the encoding of that head's slice for attn_output; (3)
// attn_output with the residual add; (4) FFN gate and up over 256-row
// blocks with GEGLU and the encoding of the block for ffn_down; (5)
// ffn_down with the residual add. RMSNorm and the encodings of its result
// run in between: a dispatch of their own for a prefill pass (normalize),
// on the calling goroutine for a few rows. The matrix products take every
// row of the pass at once; attention reads each row's own sequence; each
// worker keeps a block's product rows in its own buffer (blk) where
// nothing after the block reads them.
func (e *engine) forward(ctx context.Context, spans []span, toks []int) error {
	c := &e.c
	B := len(toks)
	if B == 0 {
		return nil
	}
	defer e.pool.hold()()
	H, F, QD := c.Hidden, c.FFN, c.QDim()
	e.cur.b = B
	e.rowSpan = grow(e.rowSpan, B)
	t := 0
	need := 0 // the longest span a query of the pass sees
	for i := range spans {
		sp := &spans[i]
		sp.t0, sp.p0 = t, len(sp.s.tokens)
		for r := range sp.n {
			e.rowSpan[t+r] = int32(i)
		}
		t += sp.n
		sp.s.hw = max(sp.s.hw, sp.p0+sp.n)
		need = max(need, sp.p0+sp.n)
	}
	e.x = grow(e.x, B*H)
	e.h = grow(e.h, B*H)
	e.qkv = grow(e.qkv, B*c.QKVRows())
	e.gate = grow(e.gate, B*c.Heads)
	e.att = grow(e.att, B*QD)
	for w := range e.blk {
		e.blk[w] = grow(e.blk[w], B*max(3*quant.QK_K, e.rowChunk(H)))
	}
	e.ff = grow(e.ff, B*F)
	e.cosS, e.sinS = grow(e.cosS, B*c.RopeDimsSWA/2), grow(e.sinS, B*c.RopeDimsSWA/2)
	e.cosF, e.sinF = grow(e.cosF, B*c.RopeDimsFull/2), grow(e.sinF, B*c.RopeDimsFull/2)
	for t, tok := range toks {
		if err := quant.DequantizeRow(e.m.Embed.Type, e.m.Embed.rowTo(tok, &e.rowb), e.x[t*H:(t+1)*H]); err != nil {
			return err
		}
		sp := &spans[e.rowSpan[t]]
		pos := sp.p0 + t - sp.t0
		hs, hf := c.RopeDimsSWA/2, c.RopeDimsFull/2
		ropeTable(e.cosS[t*hs:(t+1)*hs], e.sinS[t*hs:(t+1)*hs], pos, c.RopeDimsSWA, c.RopeThetaSWA)
		ropeTable(e.cosF[t*hf:(t+1)*hf], e.sinF[t*hf:(t+1)*hf], pos, c.RopeDimsFull, c.RopeThetaFull)
	}
	if need > len(e.scores[0]) {
		for i := range e.scores {
			e.scores[i] = make([]float32, max(need, 2*len(e.scores[i])))
		}
	}
	e.cur.spans = spans
	defer func() { e.cur.spans = nil }()
	eps := float32(c.Eps)
	float := e.opts.FloatActivations
	for l := range e.m.Layers {
		if err := ctx.Err(); err != nil {
			return err
		}
		L := &e.m.Layers[l]
		e.cur.layer = l
		for i := range spans {
			spans[i].s.ensureKV(l, spans[i].p0+spans[i].n)
		}
		e.normalize(L.AttnNorm, L.QKV.Type, L.Gate.Type)
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
			e.taskEnd, e.spanTG = e.taskEnd[:0], e.spanTG[:0]
			packs := e.planTiles(spans, l)
			n := 0
			for i := range spans {
				tg := e.f16Group(l)
				if e.spanTile[i] {
					tg = e.tileTokens(&spans[i])
				}
				e.spanTG = append(e.spanTG, tg)
				n += c.KVHeads * ((spans[i].n + tg - 1) / tg)
				e.taskEnd = append(e.taskEnd, n)
			}
			if packs > 0 {
				e.dispatch(stepPack, packs)
			}
			e.dispatch(stepAttn, n)
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

		e.normalize(L.FFNNorm, L.FFNGate.Type, L.FFNUp.Type)
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
	for i := range spans {
		sp := &spans[i]
		sp.s.tokens = append(sp.s.tokens, toks[sp.t0:sp.t0+sp.n]...)
		sp.s.prefilled += int64(sp.n)
	}
	e.prefilled.Add(int64(B))
	// The output head, for the wanted rows of every span at once: straight
	// into the span's dst when one span wants logits, else through
	// logitBuf.
	nw, owner := 0, -1
	for i := range spans {
		if k := len(spans[i].want); k > 0 {
			owner = i
			if nw > 0 {
				owner = -2
			}
			nw += k
		}
	}
	if nw == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	i := 0
	for _, sp := range spans {
		for _, r := range sp.want {
			t := sp.t0 + r
			rmsNorm(e.h[i*H:(i+1)*H], e.x[t*H:(t+1)*H], e.m.OutputNorm, eps)
			i++
		}
	}
	e.inH.reset(e.h, nw, H)
	if !float {
		e.inH.prepare(e.m.Output.Type)
	}
	V := c.Vocab
	if owner >= 0 {
		e.cur.logits = spans[owner].dst[:nw*V]
	} else {
		e.logitBuf = grow(e.logitBuf, nw*V)
		e.cur.logits = e.logitBuf
	}
	e.cur.chunk = max(256, e.rowChunk(V)/8&^31)
	e.dispatch(stepHead, (V+e.cur.chunk-1)/e.cur.chunk)
	e.cur.logits = nil
	if owner < 0 {
		i := 0
		for _, sp := range spans {
			for j := range sp.want {
				copy(sp.dst[j*V:(j+1)*V], e.logitBuf[i*V:(i+1)*V])
				i++
			}
		}
	}
	return nil
}

// work is what every thread runs for a dispatch: it takes chunks of the
// current step from a shared counter until none is left.
func (e *engine) work(w int) {
	for {
		if e.takeHook != nil {
			e.takeHook(w, -1)
		}
		// Workers take the next chunk as they come free rather than a
		// fixed share, so a slower core (or one the OS took away) takes
		// fewer and does not hold up the step.
		ch := int(e.cur.next.Add(1) - 1)
		if e.takeHook != nil {
			e.takeHook(w, ch)
		}
		if ch >= e.cur.nchunks {
			return
		}
		switch e.cur.st {
		case stepQKV:
			e.doQKV(w, ch)
		case stepPack:
			e.doPack(w, ch)
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
		case stepNorm:
			e.normRows(ch*e.cur.chunk, min(e.cur.b, (ch+1)*e.cur.chunk))
		case stepTest:
			atomic.AddInt32(&e.cur.counts[ch], 1)
		}
	}
}

// normRowsPerChunk is how many rows a stepNorm chunk normalizes; passes of
// fewer than two chunks' rows (decode) normalize on the calling goroutine.
const normRowsPerChunk = 16

// normalize writes the RMSNorm (weights nw) of the pass's rows of the
// residual stream to e.inH and encodes them for the products of types a
// and b: across the pool for a prefill pass, where done on the calling
// goroutine alone it kept the other workers waiting for ~6 % of the pass.
func (e *engine) normalize(nw []float32, a, b quant.Type) {
	B := e.cur.b
	e.inH.reset(e.h, B, e.c.Hidden)
	e.cur.norm, e.cur.normTo = nw, [2]actKind{actF32, actF32}
	if !e.opts.FloatActivations {
		for i, typ := range [2]quant.Type{a, b} {
			if k := kindOf(typ); k != actF32 && (i == 0 || k != e.cur.normTo[0]) {
				e.inH.alloc(k)
				e.cur.normTo[i] = k
			}
		}
	}
	if B < 2*normRowsPerChunk {
		e.normRows(0, B)
	} else {
		e.cur.chunk = normRowsPerChunk
		e.dispatch(stepNorm, (B+normRowsPerChunk-1)/normRowsPerChunk)
	}
	for _, k := range e.cur.normTo {
		if k != actF32 {
			e.inH.have[k] = true
		}
	}
	e.cur.norm = nil
}

// normRows normalizes and encodes rows [t0, t1) of the pass (normalize).
func (e *engine) normRows(t0, t1 int) {
	H, eps := e.c.Hidden, float32(e.c.Eps)
	for t := t0; t < t1; t++ {
		rmsNorm(e.h[t*H:(t+1)*H], e.x[t*H:(t+1)*H], e.cur.norm, eps)
		for _, k := range e.cur.normTo {
			if k != actF32 {
				e.inH.encode(k, t, 0, H)
			}
		}
	}
}

// doQKV computes the rows of one head of the fused QKV product for every
// row of the pass (chunk Heads+2*KVHeads is the gate), rotates q and k
// heads, and stores k and v heads in each row's sequence's cache.
func (e *engine) doQKV(w, ch int) {
	c := &e.c
	l := e.cur.layer
	L := &e.m.Layers[l]
	float := e.opts.FloatActivations
	nh := c.Heads + 2*c.KVHeads
	if ch == nh {
		mulRows(&L.Gate, &e.inH, 0, c.Heads, e.gate, c.Heads, float, e.rowbuf[w])
		return
	}
	hd, rows, QD, KD := c.HeadDim, c.QKVRows(), c.QDim(), c.KVDim()
	mulRows(&L.QKV, &e.inH, ch*hd, (ch+1)*hd, e.qkv, rows, float, e.rowbuf[w])
	dims, cosT, sinT := c.RopeDimsFull, e.cosF, e.sinF
	if c.Sliding[l] {
		dims, cosT, sinT = c.RopeDimsSWA, e.cosS, e.sinS
	}
	half := dims / 2
	for t := 0; t < e.cur.b; t++ {
		v := e.qkv[t*rows+ch*hd : t*rows+(ch+1)*hd]
		if ch < c.Heads+c.KVHeads {
			ropeNeox(v, cosT[t*half:(t+1)*half], sinT[t*half:(t+1)*half], dims)
		}
		off := ch*hd - QD
		if off < 0 {
			continue
		}
		sp := &e.cur.spans[e.rowSpan[t]]
		kv := &sp.s.kv[l].kvBuf
		s := sp.s.slot(l, sp.p0+t-sp.t0)
		switch {
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
// cache, the query heads of one KV head for a group of one sequence's
// tokens, f16Group): softmax(q.K/sqrt(d)).V over the positions it sees,
// times its sigmoid gate, then encodes the head's slice for attn_output
// when heads are whole encoding blocks.
func (e *engine) doAttn(w, task int) {
	c := &e.c
	l := e.cur.layer
	hd, rows, QD, KD := c.HeadDim, c.QKVRows(), c.QDim(), c.KVDim()
	if e.opts.KV == KVF16 {
		// task is (span, KV head, group of tokens): the query heads
		// sharing the KV head go together, and the tasks running at the
		// same time read the same head's keys and values.
		i := 0
		for e.taskEnd[i] <= task {
			i++
		}
		if i > 0 {
			task -= e.taskEnd[i-1]
		}
		sp := &e.cur.spans[i]
		tg := e.spanTG[i]
		ng := (sp.n + tg - 1) / tg
		kh, t0 := task/ng, sp.t0+task%ng*tg
		t1 := min(sp.t0+sp.n, t0+tg)
		if e.spanTile[i] {
			e.attendTiles(w, sp, &e.tiles[i], kh, t0, t1)
		} else {
			e.attendF16(w, sp, kh, t0, t1)
		}
		g := c.Heads / c.KVHeads
		for t := t0; t < t1; t++ {
			for h := kh * g; h < (kh+1)*g; h++ {
				e.gateHead(t, h, e.att[t*QD+h*hd:t*QD+(h+1)*hd])
			}
		}
		return
	}
	t, h := task/c.Heads, task%c.Heads
	sp := &e.cur.spans[e.rowSpan[t]]
	pos := sp.p0 + t - sp.t0
	first := 0
	if c.Sliding[l] {
		first = max(0, pos-c.Window+1)
	}
	n := pos - first + 1
	q := e.qkv[t*rows+h*hd : t*rows+(h+1)*hd]
	o := e.att[t*QD+h*hd : t*QD+(h+1)*hd]
	sc := e.scores[w][:n]
	kh := (h / (c.Heads / c.KVHeads)) * hd
	scale := float32(1 / math.Sqrt(float64(hd)))
	runs := sp.s.runs(l, first, n, e.runs[w][:0])
	e.runs[w] = runs
	for _, r := range runs {
		kernels.DotRows(q, r.buf.k[r.s*KD+kh:], KD, sc[r.j:r.j+r.n])
	}
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
	for _, r := range runs {
		kernels.AxpyRows(sc[r.j:r.j+r.n], r.buf.v[r.s*KD+kh:], KD, o)
	}
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
	n := r1 - r0
	d := e.blk[w][:e.cur.b*n]
	mulRowsTo(wt, a, r0, r1, d, n, e.opts.FloatActivations, e.rowbuf[w])
	for t := 0; t < e.cur.b; t++ {
		// x + 1*d rounds as x + d: the same sums, vectorised.
		kernels.Axpy(1, d[t*n:(t+1)*n], e.x[t*H+r0:t*H+r1])
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
	n, B := r1-r0, e.cur.b
	g, u, y := e.blk[w][:B*n], e.blk[w][B*n:2*B*n], e.blk[w][2*B*n:3*B*n]
	mulRowsTo(&L.FFNGate, &e.inH, r0, r1, g, n, float, e.rowbuf[w])
	mulRowsTo(&L.FFNUp, &e.inH, r0, r1, u, n, float, e.rowbuf[w])
	for t := 0; t < B; t++ {
		if e.cur.ffKind == actF32 {
			geglu(e.opts.GELU, e.ff[t*F+r0:t*F+r1], g[t*n:(t+1)*n], u[t*n:(t+1)*n])
			continue
		}
		// ffn_down reads only the encoding: the GEGLU rows stay in the
		// worker's buffer too.
		yt := y[t*n : (t+1)*n]
		geglu(e.opts.GELU, yt, g[t*n:(t+1)*n], u[t*n:(t+1)*n])
		e.inFF.encodeFrom(e.cur.ffKind, t, r0, yt)
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
