package spark

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/droidgo/droidgo/model/gguf"
	"github.com/droidgo/droidgo/model/kernels"
	"github.com/droidgo/droidgo/model/quant"
)

// Weight is a 2-D weight matrix in ggml layout: Rows rows of Cols elements,
// each row encoded as Type. Data is a view into the mapped file, or after
// Preload or a repack anonymous memory; once Interleaved, it holds the rows
// in the 8-row layout of kernels.Repack (read rows with Row).
type Weight struct {
	Name     string
	Type     quant.Type
	Cols     int
	Rows     int
	Data     []byte
	rowBytes int
	// x8: Data is in the interleaved layout of kernels.Repack (8-row
	// groups), not the file's.
	x8 bool
}

// Row returns the encoded bytes of row r in the file's layout (a copy when
// the weight has been repacked).
func (w *Weight) Row(r int) []byte {
	var buf []byte
	return w.rowTo(r, &buf)
}

// rowTo is Row, writing a repacked weight's row into *buf (grown if short)
// so that a caller can reuse one buffer; a plain row is a view of Data.
func (w *Weight) rowTo(r int, buf *[]byte) []byte {
	if !w.x8 {
		return w.Data[r*w.rowBytes : (r+1)*w.rowBytes]
	}
	*buf = grow(*buf, w.rowBytes)
	kernels.RepackedRow(w.Type, *buf, w.Data, r, w.Cols)
	return *buf
}

// Interleaved reports whether the weight has been repacked into 8-row groups.
func (w *Weight) Interleaved() bool { return w.x8 }

// Layer holds the weights of one transformer block.
type Layer struct {
	AttnNorm []float32
	FFNNorm  []float32
	QKV      Weight // rows: q (Heads*HeadDim) | k | v
	Gate     Weight // Heads rows: the head-wise output gate
	Out      Weight
	FFNGate  Weight
	FFNUp    Weight
	FFNDown  Weight
}

// Model is a loaded Spark model: configuration plus weights.
type Model struct {
	Config Config
	Embed  Weight // token_embd
	// Output is the output head: Embed itself (tied, as Spark ships) unless
	// the file has a separate output.weight.
	Output     Weight
	OutputNorm []float32
	Layers     []Layer
	// Format is "gguf" or "hf".
	Format string
	// GGUF is the underlying file for GGUF models (nil for HF).
	GGUF    *gguf.File
	tensors []TensorInfo
	close   func() error
	// mapped: the weights are views of a read-only file mapping (GGUF
	// opened by path), whose pages Preload may release.
	mapped    bool
	preloaded bool
	// evalMu is read-locked by every forward pass; adopt takes it to swap
	// repacked weights in between passes.
	evalMu  sync.RWMutex
	pending atomic.Bool // repacked weights wait for adopt
	rp      *repacker
}

// TensorInfo describes one tensor of the model file.
type TensorInfo struct {
	Name  string     `json:"name"`
	Type  quant.Type `json:"-"`
	Dims  []int      `json:"dims"`
	Bytes int64      `json:"bytes"`
}

// Tensors lists the tensors of the model file.
func (m *Model) Tensors() []TensorInfo { return m.tensors }

// Close releases the model's file mappings.
func (m *Model) Close() error {
	err := m.stopRepack()
	if m.close == nil {
		return err
	}
	c := m.close
	m.close = nil
	if e := c(); err == nil {
		err = e
	}
	return err
}

// Open loads a GGUF file or an HF checkpoint directory. It refuses to when
// DROIDGO_ISA names a kernel level this CPU cannot run (kernels.EnvError, an
// *kernels.ISAError): a configuration error, not a reason to run other
// kernels than asked.
func Open(path string) (*Model, error) {
	if err := kernels.EnvError(); err != nil {
		return nil, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("open model: %w", err)
	}
	if st.IsDir() {
		return OpenHF(path)
	}
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	m, err := FromGGUF(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	m.close = f.Close
	m.mapped = true
	return m, nil
}

// tensorSource abstracts over GGUF and safetensors tensor tables.
type tensorSource func(name string) (typ quant.Type, dims []int, data []byte, ok bool)

// FromGGUF builds a Model over an open GGUF file; the file must stay open
// while the model is used.
func FromGGUF(f *gguf.File) (*Model, error) {
	cfg, err := ConfigFromGGUF(f)
	if err != nil {
		return nil, err
	}
	src := func(name string) (quant.Type, []int, []byte, bool) {
		t, ok := f.Tensor(name)
		if !ok {
			return 0, nil, nil, false
		}
		return t.Type, t.Dims, t.Data, true
	}
	m, err := build(cfg, src, ggufNames)
	if err != nil {
		return nil, err
	}
	m.Format = "gguf"
	m.GGUF = f
	for _, t := range f.Tensors() {
		m.tensors = append(m.tensors, TensorInfo{t.Name, t.Type, t.Dims, int64(len(t.Data))})
	}
	return m, nil
}

// names maps the logical weights to file tensor names.
type names struct {
	embed, outNorm, output                                     string
	attnNorm, ffnNorm, qkv, gate, out, ffnGate, ffnUp, ffnDown string // with one %d for the layer
}

var ggufNames = names{
	embed: "token_embd.weight", outNorm: "output_norm.weight", output: "output.weight",
	attnNorm: "blk.%d.attn_norm.weight", ffnNorm: "blk.%d.ffn_norm.weight",
	qkv: "blk.%d.attn_qkv.weight", gate: "blk.%d.attn_gate.weight", out: "blk.%d.attn_output.weight",
	ffnGate: "blk.%d.ffn_gate.weight", ffnUp: "blk.%d.ffn_up.weight", ffnDown: "blk.%d.ffn_down.weight",
}

var hfNames = names{
	embed: "model.embedding.weight", outNorm: "model.norm.weight", output: "lm_head.weight",
	attnNorm: "model.layers.%d.input_layernorm.weight", ffnNorm: "model.layers.%d.post_attention_layernorm.weight",
	qkv: "model.layers.%d.self_attn.q_k_v_proj.weight", gate: "model.layers.%d.self_attn.g_proj.weight",
	out: "model.layers.%d.self_attn.out_proj.weight", ffnGate: "model.layers.%d.mlp.gate_proj.weight",
	ffnUp: "model.layers.%d.mlp.up_proj.weight", ffnDown: "model.layers.%d.mlp.down_proj.weight",
}

func build(cfg Config, src tensorSource, n names) (*Model, error) {
	m := &Model{Config: cfg}
	var err error
	weight := func(name string, cols, rows int) Weight {
		if err != nil {
			return Weight{}
		}
		typ, dims, data, ok := src(name)
		if !ok {
			err = fmt.Errorf("%w: tensor %s is missing", ErrModel, name)
			return Weight{}
		}
		if len(dims) != 2 || dims[0] != cols || dims[1] != rows {
			err = fmt.Errorf("%w: tensor %s has shape %v, the metadata implies [%d %d]", ErrModel, name, dims, cols, rows)
			return Weight{}
		}
		if !typ.Supported() {
			err = fmt.Errorf("%w: tensor %s has type %s, which is not supported", ErrModel, name, gguf.TypeName(typ))
			return Weight{}
		}
		rb := typ.RowSize(cols)
		if rb < 0 || len(data) != rb*rows {
			err = fmt.Errorf("%w: tensor %s has %d bytes, want %d", ErrModel, name, len(data), rb*rows)
			return Weight{}
		}
		return Weight{Name: name, Type: typ, Cols: cols, Rows: rows, Data: data, rowBytes: rb}
	}
	norm := func(name string, size int) []float32 {
		if err != nil {
			return nil
		}
		typ, dims, data, ok := src(name)
		if !ok {
			err = fmt.Errorf("%w: tensor %s is missing", ErrModel, name)
			return nil
		}
		if len(dims) != 1 || dims[0] != size {
			err = fmt.Errorf("%w: tensor %s has shape %v, want [%d]", ErrModel, name, dims, size)
			return nil
		}
		if !typ.Supported() || typ.RowSize(size) != len(data) {
			err = fmt.Errorf("%w: tensor %s has unsupported type %s", ErrModel, name, gguf.TypeName(typ))
			return nil
		}
		out := make([]float32, size)
		if e := quant.DequantizeRow(typ, data, out); e != nil {
			err = fmt.Errorf("%w: tensor %s: %v", ErrModel, name, e)
		}
		return out
	}
	c := &cfg
	m.Embed = weight(n.embed, c.Hidden, c.Vocab)
	m.Output = m.Embed
	if n.output != "" {
		if _, _, _, ok := src(n.output); ok {
			m.Output = weight(n.output, c.Hidden, c.Vocab)
		}
	}
	m.OutputNorm = norm(n.outNorm, c.Hidden)
	m.Layers = make([]Layer, c.Layers)
	for i := range m.Layers {
		l := &m.Layers[i]
		f := func(s string) string { return fmt.Sprintf(s, i) }
		l.AttnNorm = norm(f(n.attnNorm), c.Hidden)
		l.FFNNorm = norm(f(n.ffnNorm), c.Hidden)
		l.QKV = weight(f(n.qkv), c.Hidden, c.QKVRows())
		l.Gate = weight(f(n.gate), c.Hidden, c.Heads)
		l.Out = weight(f(n.out), c.QDim(), c.Hidden)
		l.FFNGate = weight(f(n.ffnGate), c.Hidden, c.FFN)
		l.FFNUp = weight(f(n.ffnUp), c.Hidden, c.FFN)
		l.FFNDown = weight(f(n.ffnDown), c.FFN, c.Hidden)
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

// WeightBytes returns the total size of the weights.
func (m *Model) WeightBytes() int64 {
	var n int64
	for _, t := range m.tensors {
		n += t.Bytes
	}
	return n
}

// KVBytes returns the KV cache memory the engine needs for ctx positions
// with the default (f16) cache; KVBytesOf gives it for either type.
func (c *Config) KVBytes(ctx int) int64 { return c.KVBytesOf(ctx, KVF16) }

// ScratchBytes estimates the engine's activation buffers for a prefill
// chunk of batch tokens (float32), including one vocabulary row of logits
// per worker-sized scratch, and the converted keys and values of tile
// attention at most (counted on every CPU: a model that fits does not
// stop fitting on one with AMX).
func ScratchBytes(c Config, batch int) int64 {
	per := int64(2*c.Hidden+c.QKVRows()+c.Heads+c.QDim()+c.Hidden+3*c.FFN) * 4
	return per*int64(batch) + int64(c.Vocab)*4*2 + int64(max(c.Hidden, c.FFN, c.QDim()))*4*int64(batch) + int64(tileArenaBytes(&c))
}
