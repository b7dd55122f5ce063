// Package spark runs Spark-X2.5 models (GGUF architecture "spark2_5") in
// pure Go: it loads GGUF files and HF safetensors checkpoints, checks them
// against their metadata, and computes logits with a KV cache that persists
// across calls (see Engine).
//
// Typical use by a chat backend:
//
//	m, err := spark.Open(path)          // GGUF file or HF directory, memory-mapped
//	e, err := spark.NewEngine(m, spark.Options{})
//	kept := e.Reuse(promptTokens)       // keep the cached common prefix (< len(prompt))
//	logits, err := e.Eval(ctx, promptTokens[kept:], spark.LogitsLast)
//	for ... {                           // sample tok from logits, then
//		logits, err = e.Eval(ctx, []int{tok}, spark.LogitsLast)
//	}
//
// e.Tokens() is what the cache holds (prompt plus fed-back tokens), and
// e.Prefilled() counts every token computed, so cache hits are measurable.
// Semantics follow the reference (HF) model: hybrid sliding/full attention,
// per-layer-type NEOX RoPE, head-wise sigmoid output gate, GEGLU with exact
// erf GELU, fp32 residual stream, tied output head. Options.GELU selects
// llama.cpp's GELU variants for comparisons.
package spark

import (
	"errors"
	"fmt"

	"github.com/droidgo/droidgo/model/gguf"
)

// Arch is the GGUF general.architecture of Spark-X2.5 models.
const Arch = "spark2_5"

// ErrModel is wrapped by errors about a model that is well-formed as a file
// but is not a usable Spark model (wrong architecture, missing keys or
// tensors, shapes that contradict the metadata).
var ErrModel = errors.New("invalid Spark model")

// Config is the shape and hyperparameters of a Spark model, all read from
// the file's metadata.
type Config struct {
	Layers        int     `json:"layers"`
	Hidden        int     `json:"hidden"`
	FFN           int     `json:"ffn"`
	Heads         int     `json:"heads"`
	KVHeads       int     `json:"kv_heads"`
	HeadDim       int     `json:"head_dim"`
	Vocab         int     `json:"vocab"`
	Context       int     `json:"context_length"`
	Eps           float64 `json:"rms_eps"`
	Window        int     `json:"sliding_window"`
	Sliding       []bool  `json:"sliding"`
	RopeThetaFull float64 `json:"rope_theta_full"`
	RopeThetaSWA  float64 `json:"rope_theta_swa"`
	RopeDimsFull  int     `json:"rope_dims_full"`
	RopeDimsSWA   int     `json:"rope_dims_swa"`
}

// QDim is the width of the query projection (Heads*HeadDim).
func (c *Config) QDim() int { return c.Heads * c.HeadDim }

// KVDim is the width of each of the K and V projections.
func (c *Config) KVDim() int { return c.KVHeads * c.HeadDim }

// QKVRows is the number of rows of the fused attn_qkv weight.
func (c *Config) QKVRows() int { return c.QDim() + 2*c.KVDim() }

// MaxPositions is how many positions a sequence may hold unless
// Options.MaxContext says otherwise: the model's context length, or 1<<20
// when its file gives none.
func (c *Config) MaxPositions() int {
	if c.Context > 0 {
		return c.Context
	}
	return 1 << 20
}

// Validate checks that the configuration is internally consistent.
func (c *Config) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrModel, fmt.Sprintf(format, a...))
	}
	const big = 1 << 24
	for _, v := range []struct {
		name string
		v    int
	}{{"block_count", c.Layers}, {"embedding_length", c.Hidden}, {"feed_forward_length", c.FFN},
		{"attention.head_count", c.Heads}, {"attention.head_count_kv", c.KVHeads}, {"attention.key_length", c.HeadDim},
		{"vocab size", c.Vocab}, {"attention.sliding_window", c.Window}} {
		if v.v <= 0 || v.v > big {
			return bad("%s is %d", v.name, v.v)
		}
	}
	if c.Heads%c.KVHeads != 0 {
		return bad("head_count %d is not a multiple of head_count_kv %d", c.Heads, c.KVHeads)
	}
	if len(c.Sliding) != c.Layers {
		return bad("sliding_window_pattern has %d entries for %d layers", len(c.Sliding), c.Layers)
	}
	for _, d := range []int{c.RopeDimsFull, c.RopeDimsSWA} {
		if d <= 0 || d > c.HeadDim || d%2 != 0 {
			return bad("rope dimension count %d must be even and in 1..%d", d, c.HeadDim)
		}
	}
	if !(c.Eps > 0 && c.Eps < 1) {
		return bad("rms epsilon %g", c.Eps)
	}
	if !(c.RopeThetaFull > 0) || !(c.RopeThetaSWA > 0) {
		return bad("rope theta %g / %g", c.RopeThetaFull, c.RopeThetaSWA)
	}
	return nil
}

// ConfigFromGGUF reads the Spark configuration from GGUF metadata.
func ConfigFromGGUF(f *gguf.File) (Config, error) {
	var c Config
	arch := f.Architecture()
	if arch == "" {
		return c, fmt.Errorf("%w: general.architecture is missing", ErrModel)
	}
	if arch != Arch {
		return c, fmt.Errorf("%w: architecture is %q, want %q", ErrModel, arch, Arch)
	}
	var err error
	need := func(key string) int {
		if err != nil {
			return 0
		}
		full := Arch + "." + key
		if v, ok := f.Uint(full); ok {
			if v > 1<<31 {
				err = fmt.Errorf("%w: %s is %d", ErrModel, full, v)
			}
			return int(v)
		}
		// Per-layer arrays are accepted when every layer agrees.
		if a, ok := f.Ints(full); ok && len(a) > 0 {
			for _, x := range a {
				if x != a[0] {
					err = fmt.Errorf("%w: %s varies per layer, which is not supported", ErrModel, full)
					return 0
				}
			}
			if a[0] < 0 || a[0] > 1<<31 {
				err = fmt.Errorf("%w: %s is %d", ErrModel, full, a[0])
			}
			return int(a[0])
		}
		err = fmt.Errorf("%w: metadata key %s is missing or not an integer", ErrModel, full)
		return 0
	}
	c.Layers = need("block_count")
	c.Hidden = need("embedding_length")
	c.FFN = need("feed_forward_length")
	c.Heads = need("attention.head_count")
	c.KVHeads = need("attention.head_count_kv")
	c.HeadDim = need("attention.key_length")
	vdim := need("attention.value_length")
	c.Window = need("attention.sliding_window")
	c.RopeDimsFull = need("rope.dimension_count")
	if err != nil {
		return c, err
	}
	if vdim != c.HeadDim {
		return c, fmt.Errorf("%w: value_length %d differs from key_length %d", ErrModel, vdim, c.HeadDim)
	}
	c.RopeDimsSWA = c.RopeDimsFull
	if v, ok := f.Uint(Arch + ".rope.dimension_count_swa"); ok {
		c.RopeDimsSWA = int(min(v, 1<<31))
	}
	if v, ok := f.Uint(Arch + ".context_length"); ok {
		c.Context = int(min(v, 1<<40))
	}
	eps, ok := f.Float(Arch + ".attention.layer_norm_rms_epsilon")
	if !ok {
		return c, fmt.Errorf("%w: metadata key %s.attention.layer_norm_rms_epsilon is missing", ErrModel, Arch)
	}
	c.Eps = eps
	c.RopeThetaFull = 10000
	if v, ok := f.Float(Arch + ".rope.freq_base"); ok {
		c.RopeThetaFull = v
	}
	c.RopeThetaSWA = c.RopeThetaFull
	if v, ok := f.Float(Arch + ".rope.freq_base_swa"); ok {
		c.RopeThetaSWA = v
	}
	pat, ok := f.Bools(Arch + ".attention.sliding_window_pattern")
	if !ok {
		return c, fmt.Errorf("%w: metadata key %s.attention.sliding_window_pattern (bool array) is missing", ErrModel, Arch)
	}
	c.Sliding = pat
	if t, ok := f.Tensor("token_embd.weight"); ok && len(t.Dims) == 2 {
		c.Vocab = t.Dims[1]
	}
	if v, ok := f.Uint(Arch + ".vocab_size"); ok && c.Vocab != 0 && int(min(v, 1<<40)) != c.Vocab {
		return c, fmt.Errorf("%w: vocab_size %d but token_embd has %d rows", ErrModel, v, c.Vocab)
	}
	if c.Vocab == 0 {
		return c, fmt.Errorf("%w: tensor token_embd.weight is missing or not 2-D", ErrModel)
	}
	return c, c.Validate()
}

// SetGGUF writes c as spark2_5 metadata.
func (c *Config) SetGGUF(w *gguf.Writer) {
	p := Arch + "."
	w.Set("general.architecture", Arch)
	w.Set(p+"block_count", uint32(c.Layers))
	w.Set(p+"context_length", uint32(c.Context))
	w.Set(p+"embedding_length", uint32(c.Hidden))
	w.Set(p+"feed_forward_length", uint32(c.FFN))
	w.Set(p+"attention.head_count", uint32(c.Heads))
	w.Set(p+"attention.head_count_kv", uint32(c.KVHeads))
	w.Set(p+"attention.key_length", uint32(c.HeadDim))
	w.Set(p+"attention.value_length", uint32(c.HeadDim))
	w.Set(p+"attention.layer_norm_rms_epsilon", float32(c.Eps))
	w.Set(p+"attention.sliding_window", uint32(c.Window))
	w.Set(p+"attention.sliding_window_pattern", append([]bool(nil), c.Sliding...))
	w.Set(p+"rope.freq_base", float32(c.RopeThetaFull))
	w.Set(p+"rope.freq_base_swa", float32(c.RopeThetaSWA))
	w.Set(p+"rope.dimension_count", uint32(c.RopeDimsFull))
	w.Set(p+"rope.dimension_count_swa", uint32(c.RopeDimsSWA))
	w.Set(p+"vocab_size", uint32(c.Vocab))
}

// Preset returns a named model shape: "1.7b" (Spark-X2.5-1.7B), "4b", "tiny"
// (the peer toolkit's tiny preset), "gqa" (tiny, 8:2 heads with
// heads*head_dim == hidden like the real model) and "q" (tiny, rows multiple
// of 256 so K-quants apply everywhere).
func Preset(name string) (Config, bool) {
	pattern := func(n int) []bool {
		p := make([]bool, n)
		for i := range p {
			p[i] = i%4 != 3
		}
		return p
	}
	switch name {
	case "1.7b":
		return Config{Layers: 28, Hidden: 2048, FFN: 6656, Heads: 8, KVHeads: 2, HeadDim: 256, Vocab: 131072,
			Context: 1048576, Eps: 1e-6, Window: 512, Sliding: pattern(28), RopeThetaFull: 5e6, RopeThetaSWA: 1e4,
			RopeDimsFull: 64, RopeDimsSWA: 256}, true
	case "4b":
		return Config{Layers: 36, Hidden: 2560, FFN: 10240, Heads: 16, KVHeads: 4, HeadDim: 256, Vocab: 131072,
			Context: 1048576, Eps: 1e-6, Window: 512, Sliding: pattern(36), RopeThetaFull: 5e6, RopeThetaSWA: 1e4,
			RopeDimsFull: 64, RopeDimsSWA: 256}, true
	case "tiny":
		return Config{Layers: 8, Hidden: 128, FFN: 320, Heads: 4, KVHeads: 2, HeadDim: 64, Vocab: 512,
			Context: 1024, Eps: 1e-6, Window: 8, Sliding: pattern(8), RopeThetaFull: 5e6, RopeThetaSWA: 1e4,
			RopeDimsFull: 16, RopeDimsSWA: 64}, true
	case "gqa":
		return Config{Layers: 4, Hidden: 256, FFN: 256, Heads: 8, KVHeads: 2, HeadDim: 32, Vocab: 256,
			Context: 1024, Eps: 1e-6, Window: 8, Sliding: pattern(4), RopeThetaFull: 5e6, RopeThetaSWA: 1e4,
			RopeDimsFull: 8, RopeDimsSWA: 32}, true
	case "q":
		return Config{Layers: 4, Hidden: 256, FFN: 512, Heads: 4, KVHeads: 2, HeadDim: 64, Vocab: 256,
			Context: 1024, Eps: 1e-6, Window: 8, Sliding: pattern(4), RopeThetaFull: 5e6, RopeThetaSWA: 1e4,
			RopeDimsFull: 16, RopeDimsSWA: 64}, true
	}
	return Config{}, false
}
