package spark

import (
	"context"
	"fmt"
	"math"

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
	// Threads is the number of goroutines for matrix products
	// (default: runtime.NumCPU()).
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
	// layer together (default 64, at most 257).
	Batch int
	// MaxContext bounds the number of cached positions (default: the
	// model's context length).
	MaxContext int

	// slack overrides ringSlack (tests use tiny rings to exercise wrapping).
	slack int
}

type layerKV struct {
	k, v    []float32 // [slot][KVHeads*HeadDim]
	sliding bool
}

// Engine runs a Model with a KV cache that persists across calls.
//
// Tokens are appended with Eval (or Prefill, which skips the logits); the
// cache then holds their keys and values and Tokens reports them. A caller
// that re-sends a conversation whose beginning is unchanged calls Reuse (or
// Truncate) first, so only the new suffix is computed. Sliding-window layers
// keep a ring of Window+256 positions, so Truncate can drop up to about 256
// recent positions cheaply; going further back clears the cache.
//
// An Engine is not safe for concurrent use.
type Engine struct {
	m    *Model
	c    Config
	opts Options
	pool pool

	tokens    []int
	kv        []layerKV
	ring      int
	maxCtx    int
	prefilled int64
	// hw is the highest position count ever written; ring slots below
	// hw-ring have been overwritten even if the cache was truncated since.
	hw int

	scratch [][]float32
	// per-chunk buffers
	x, h, qkv, gate, att, tmp, fg, fu, ff []float32
	in                                    acts
	cosS, sinS, cosF, sinF                []float32
}

// NewEngine prepares an engine for m.
func NewEngine(m *Model, opts Options) (*Engine, error) {
	c := m.Config
	if opts.Batch <= 0 {
		opts.Batch = 64
	}
	if opts.slack <= 0 {
		opts.slack = ringSlack
	}
	opts.Batch = min(opts.Batch, opts.slack+1)
	e := &Engine{m: m, c: c, opts: opts, pool: newPool(opts.Threads), ring: c.Window + opts.slack}
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
	e.scratch = make([][]float32, e.pool.threads)
	for i := range e.scratch {
		e.scratch[i] = make([]float32, max(width, c.Vocab))
	}
	return e, nil
}

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
func (e *Engine) Reset() { e.tokens, e.hw = e.tokens[:0], 0 }

// canKeep reports whether the first n cached positions can be kept without
// recomputation: every sliding layer must still hold the keys that
// position n would see.
func (e *Engine) canKeep(n int) bool {
	if n == 0 || n == len(e.tokens) {
		return true
	}
	oldest := max(len(e.tokens), e.hw) - e.ring // positions below this were overwritten
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
	_, err := e.Eval(ctx, tokens, LogitsNone)
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
		out = make([]float32, len(tokens)*V)
	case LogitsLast:
		if len(tokens) == 0 {
			return nil, fmt.Errorf("eval: no tokens to compute logits for")
		}
		out = make([]float32, V)
	}
	for start := 0; start < len(tokens); start += e.opts.Batch {
		end := min(len(tokens), start+e.opts.Batch)
		var want []int // chunk rows whose logits are needed
		var dst []float32
		switch mode {
		case LogitsAll:
			for i := start; i < end; i++ {
				want = append(want, i-start)
			}
			dst = out[start*V : end*V]
		case LogitsLast:
			if end == len(tokens) {
				want = []int{end - 1 - start}
				dst = out
			}
		}
		if err := e.forward(ctx, tokens[start:end], want, dst); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (e *Engine) ensureKV(l int, n int) {
	kv := &e.kv[l]
	w := e.c.KVDim()
	slots := n
	if kv.sliding {
		slots = min(n, e.ring)
	}
	if len(kv.k) >= slots*w {
		return
	}
	// Grow full-attention caches geometrically (in 256-position pages).
	newSlots := max(slots, len(kv.k)/w*2, 256)
	if kv.sliding {
		newSlots = min(newSlots, e.ring)
	} else {
		newSlots = min(newSlots, e.maxCtx)
	}
	nk := make([]float32, newSlots*w)
	nv := make([]float32, newSlots*w)
	copy(nk, kv.k)
	copy(nv, kv.v)
	kv.k, kv.v = nk, nv
}

func (e *Engine) slot(l, pos int) int {
	if e.kv[l].sliding {
		return pos % e.ring
	}
	return pos
}

// forward runs one chunk of tokens through the model, appends it to the
// cache, and writes the logits of the chunk rows in want to dst.
func (e *Engine) forward(ctx context.Context, toks []int, want []int, dst []float32) error {
	c := &e.c
	B := len(toks)
	H, F, QD, KD, hd := c.Hidden, c.FFN, c.QDim(), c.KVDim(), c.HeadDim
	p0 := len(e.tokens)
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
		if err := quant.DequantizeRow(e.m.Embed.Type, e.m.Embed.Row(tok), e.x[t*H:(t+1)*H]); err != nil {
			return err
		}
		hs, hf := c.RopeDimsSWA/2, c.RopeDimsFull/2
		ropeTable(e.cosS[t*hs:(t+1)*hs], e.sinS[t*hs:(t+1)*hs], p0+t, c.RopeDimsSWA, c.RopeThetaSWA)
		ropeTable(e.cosF[t*hf:(t+1)*hf], e.sinF[t*hf:(t+1)*hf], p0+t, c.RopeDimsFull, c.RopeThetaFull)
	}
	eps := float32(c.Eps)
	scale := float32(1 / math.Sqrt(float64(hd)))
	group := c.Heads / c.KVHeads
	rows := c.QKVRows()
	for l := range e.m.Layers {
		if err := ctx.Err(); err != nil {
			return err
		}
		L := &e.m.Layers[l]
		kv := &e.kv[l]
		e.ensureKV(l, p0+B)
		for t := 0; t < B; t++ {
			rmsNorm(e.h[t*H:(t+1)*H], e.x[t*H:(t+1)*H], L.AttnNorm, eps)
		}
		e.in.reset(e.h, B, H)
		e.matmul(&L.QKV, &e.in, e.qkv)
		e.matmul(&L.Gate, &e.in, e.gate)
		dims, cosT, sinT := c.RopeDimsFull, e.cosF, e.sinF
		if kv.sliding {
			dims, cosT, sinT = c.RopeDimsSWA, e.cosS, e.sinS
		}
		half := dims / 2
		for t := 0; t < B; t++ {
			row := e.qkv[t*rows : (t+1)*rows]
			cs, sn := cosT[t*half:(t+1)*half], sinT[t*half:(t+1)*half]
			for h := 0; h < c.Heads+c.KVHeads; h++ {
				ropeNeox(row[h*hd:(h+1)*hd], cs, sn, dims)
			}
			s := e.slot(l, p0+t)
			copy(kv.k[s*KD:(s+1)*KD], row[QD:QD+KD])
			copy(kv.v[s*KD:(s+1)*KD], row[QD+KD:QD+2*KD])
		}
		// Attention, one task per (token, query head).
		e.pool.run(B*c.Heads, 1, func(worker, lo, hi int) {
			sc := e.scratch[worker]
			for task := lo; task < hi; task++ {
				t, h := task/c.Heads, task%c.Heads
				pos := p0 + t
				first := 0
				if kv.sliding {
					first = max(0, pos-c.Window+1)
				}
				n := pos - first + 1
				if len(sc) < n {
					sc = make([]float32, n)
					e.scratch[worker] = sc
				}
				q := e.qkv[t*rows+h*hd : t*rows+(h+1)*hd]
				kh := (h / group) * hd
				mx := float32(math.Inf(-1))
				for j := 0; j < n; j++ {
					s := e.slot(l, first+j)
					v := dotF32(q, kv.k[s*KD+kh:s*KD+kh+hd]) * scale
					sc[j] = v
					mx = max(mx, v)
				}
				var sum float64
				for j := 0; j < n; j++ {
					p := float32(math.Exp(float64(sc[j] - mx)))
					sc[j] = p
					sum += float64(p)
				}
				o := e.att[t*QD+h*hd : t*QD+(h+1)*hd]
				for i := range o {
					o[i] = 0
				}
				inv := float32(1 / sum)
				for j := 0; j < n; j++ {
					s := e.slot(l, first+j)
					p := sc[j] * inv
					vr := kv.v[s*KD+kh : s*KD+kh+hd]
					for i := range o {
						o[i] += p * vr[i]
					}
				}
				g := sigmoid(e.gate[t*c.Heads+h])
				for i := range o {
					o[i] *= g
				}
			}
		})
		e.in.reset(e.att, B, QD)
		e.matmul(&L.Out, &e.in, e.tmp)
		for i := range e.x[:B*H] {
			e.x[i] += e.tmp[i]
		}
		for t := 0; t < B; t++ {
			rmsNorm(e.h[t*H:(t+1)*H], e.x[t*H:(t+1)*H], L.FFNNorm, eps)
		}
		e.in.reset(e.h, B, H)
		e.matmul(&L.FFNGate, &e.in, e.fg)
		e.matmul(&L.FFNUp, &e.in, e.fu)
		geglu(e.opts.GELU, e.ff[:B*F], e.fg[:B*F], e.fu[:B*F])
		e.in.reset(e.ff, B, F)
		e.matmul(&L.FFNDown, &e.in, e.tmp)
		for i := range e.x[:B*H] {
			e.x[i] += e.tmp[i]
		}
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
	e.in.reset(e.h, len(want), H)
	e.matmul(&e.m.Output, &e.in, dst[:len(want)*c.Vocab])
	return nil
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
		if logits, err = e.Eval(ctx, []int{best}, LogitsLast); err != nil {
			return out, err
		}
	}
	return out, nil
}
