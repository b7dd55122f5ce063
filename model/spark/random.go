package spark

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/droidgo/droidgo/model/chat"
	"github.com/droidgo/droidgo/model/gguf"
	"github.com/droidgo/droidgo/model/quant"
	"github.com/droidgo/droidgo/model/safetensors"
	"github.com/droidgo/droidgo/model/tokenizer"
)

// RandomTensor describes one tensor of a random model: its GGUF name, HF
// name, ggml dims and the standard deviation of its values (norms are
// 1 + U(-0.2, 0.2) instead).
type RandomTensor struct {
	Name   string
	HFName string
	Dims   []int
	Std    float64
	Norm   bool
	Layer  int // -1 for global tensors
	Kind   string
}

// RandomTensors lists the tensors of a Spark model with config c in file
// order, with the initialisation scales of the peer toolkit (token_embd std
// 4/sqrt(hidden), projections 1/sqrt(fan_in)).
func RandomTensors(c Config) []RandomTensor {
	H := c.Hidden
	ts := []RandomTensor{
		{Name: "token_embd.weight", HFName: hfNames.embed, Dims: []int{H, c.Vocab}, Std: 4 / math.Sqrt(float64(H)), Layer: -1, Kind: "token_embd"},
		{Name: "output_norm.weight", HFName: hfNames.outNorm, Dims: []int{H}, Norm: true, Layer: -1, Kind: "norm"},
	}
	for i := 0; i < c.Layers; i++ {
		add := func(g, hf string, dims []int, std float64, kind string) {
			ts = append(ts, RandomTensor{Name: fmt.Sprintf(g, i), HFName: fmt.Sprintf(hf, i), Dims: dims, Std: std, Norm: std == 0, Layer: i, Kind: kind})
		}
		inv := func(n int) float64 { return 1 / math.Sqrt(float64(n)) }
		add(ggufNames.attnNorm, hfNames.attnNorm, []int{H}, 0, "norm")
		add(ggufNames.qkv, hfNames.qkv, []int{H, c.QKVRows()}, inv(H), "attn_qkv")
		add(ggufNames.gate, hfNames.gate, []int{H, c.Heads}, inv(H), "attn_gate")
		add(ggufNames.out, hfNames.out, []int{c.QDim(), H}, inv(c.QDim()), "attn_output")
		add(ggufNames.ffnNorm, hfNames.ffnNorm, []int{H}, 0, "norm")
		add(ggufNames.ffnGate, hfNames.ffnGate, []int{H, c.FFN}, inv(H), "ffn_gate")
		add(ggufNames.ffnUp, hfNames.ffnUp, []int{H, c.FFN}, inv(H), "ffn_up")
		add(ggufNames.ffnDown, hfNames.ffnDown, []int{c.FFN, H}, inv(c.FFN), "ffn_down")
	}
	return ts
}

// FillRow writes row r of the random tensor t for seed into dst. Each row
// has its own generator, so rows can be made in parallel and every storage
// type of one seed holds the same underlying values.
func (t RandomTensor) FillRow(seed uint64, r int, dst []float32) {
	h := fnv.New64a()
	h.Write([]byte(t.Name))
	rng := rand.New(rand.NewPCG(seed^h.Sum64(), uint64(r)))
	if t.Norm {
		// Norms are stored as F32 in GGUF and BF16 in HF checkpoints; values
		// on the bf16 grid make both hold the same numbers.
		for i := range dst {
			dst[i] = quant.BF16ToFP32(quant.FP32ToBF16(float32(1 + 0.4*(rng.Float64()-0.5))))
		}
		return
	}
	a := t.Std * math.Sqrt(3)
	for i := range dst {
		dst[i] = float32(a * (2*rng.Float64() - 1))
	}
}

// useMoreBits is llama.cpp's layer choice for extra precision in *_K_M mixes.
func useMoreBits(i, n int) bool { return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2 }

// TensorType returns the storage type of a random tensor for a file type
// name: f32, f16, bf16, q8_0, q4_0, q4_k, q5_k, q6_k (uniform) or q4_k_m
// (llama.cpp's Q4_K_M mix: Q6_K on token_embd and on attn_qkv/ffn_down of
// the layers use_more_bits picks, Q4_K elsewhere). Norms are always F32;
// rows whose length does not fit the block size fall back to Q8_0 (or F16).
func TensorType(c Config, t RandomTensor, fileType string) (quant.Type, error) {
	if t.Norm {
		return quant.F32, nil
	}
	var typ quant.Type
	switch fileType {
	case "q4_k_m":
		typ = quant.Q4_K
		if t.Kind == "token_embd" || ((t.Kind == "attn_qkv" || t.Kind == "ffn_down") && useMoreBits(t.Layer, c.Layers)) {
			typ = quant.Q6_K
		}
	default:
		var ok bool
		typ, ok = quant.ParseType(fileType)
		if !ok || !typ.Supported() {
			return 0, fmt.Errorf("unknown model type %q (want f32, f16, bf16, q8_0, q4_0, q4_k, q5_k, q6_k or q4_k_m)", fileType)
		}
	}
	if typ.RowSize(t.Dims[0]) < 0 {
		typ = quant.Q8_0
		if typ.RowSize(t.Dims[0]) < 0 {
			typ = quant.F16
		}
	}
	return typ, nil
}

// fileTypeIDs are llama.cpp's general.file_type values.
var fileTypeIDs = map[string]uint32{"f32": 0, "f16": 1, "q4_0": 2, "q8_0": 7, "q4_k_m": 15, "q4_k": 14, "q5_k": 17, "q6_k": 18, "bf16": 32}

// encodeRows quantises rows of t in parallel into buf.
func encodeRows(t RandomTensor, typ quant.Type, seed uint64, buf []byte) error {
	cols := t.Dims[0]
	rows := len(buf) / typ.RowSize(cols)
	rb := typ.RowSize(cols)
	workers := runtime.NumCPU()
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			row := make([]float32, cols)
			for r := w; r < rows; r += workers {
				t.FillRow(seed, r, row)
				if err := quant.QuantizeRow(typ, row, buf[r*rb:(r+1)*rb]); err != nil {
					errs[w] = err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// WriteRandomGGUF writes a random-weight Spark model with config c to path.
// fileType is as for TensorType. Tensors are generated while writing, so a
// full-size model needs memory for one tensor at a time.
func WriteRandomGGUF(path string, c Config, fileType string, seed uint64) error {
	if err := c.Validate(); err != nil {
		return err
	}
	w := gguf.NewWriter()
	c.SetGGUF(w)
	w.Set("general.name", "Spark-X2.5-random")
	if id, ok := fileTypeIDs[fileType]; ok {
		w.Set("general.file_type", id)
	}
	w.Set("general.quantization_version", uint32(2))
	w.Set("droidgo.random_seed", seed)
	addTokenizer(w, c.Vocab)
	for _, t := range RandomTensors(c) {
		typ, err := TensorType(c, t, fileType)
		if err != nil {
			return err
		}
		t := t
		w.AddTensorFunc(t.Name, typ, t.Dims, func(buf []byte) error { return encodeRows(t, typ, seed, buf) })
	}
	return w.WriteFile(path)
}

// SpecialTokens are Spark-X2.5's special tokens (see the official
// tokenizer): BOS, EOS, pad, the reasoning and tool-call tags and the
// chat roles. Random models carry them as control tokens, so the chat
// template, the tokenizer's special-token matching and the tool-call
// parser see the same token structure as with the real model.
var SpecialTokens = []string{
	"<｜start▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜pad▁token｜>",
	"<think>", "</think>",
	"<|System|>", "<|User|>", "<|Tool|>", "<|Bot|>",
	"<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>",
	"<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>",
}

// addTokenizer writes a small synthetic byte-level BPE vocabulary: 256
// byte tokens, filler merges, and Spark's special tokens as control tokens
// last, with the official chat template, so that the agent can run on a
// random model and llama.cpp accepts the file. A vocabulary too small for
// them gets no tokenizer.
func addTokenizer(w *gguf.Writer, vocab int) {
	if vocab < 256+len(SpecialTokens) {
		w.Set("tokenizer.ggml.model", "none")
		return
	}
	byteTok := func(b int) string { return string(tokenizer.ByteRune(byte(b))) }
	toks := make([]string, vocab)
	types := make([]int32, vocab)
	for i := 0; i < 256; i++ {
		toks[i] = byteTok(i)
		types[i] = 1
	}
	// Pairs of bytes first, then pair+byte triples: every token string is
	// distinct (llama.cpp asserts that) and every merge joins two tokens
	// that exist.
	first := vocab - len(SpecialTokens)
	var merges []string
	for n := 256; n < first; n++ {
		k := n - 256
		var l, r string
		if k < 256*256 {
			l, r = byteTok((k/256+'a')%256), byteTok((k%256+'a')%256)
		} else {
			k -= 256 * 256
			l, r = toks[256+(k/256)%(256*256)], byteTok(k%256)
		}
		toks[n] = l + r
		types[n] = 1
		merges = append(merges, l+" "+r)
	}
	for i, s := range SpecialTokens {
		toks[first+i], types[first+i] = s, 3
	}
	w.Set("tokenizer.ggml.model", "gpt2")
	w.Set("tokenizer.ggml.pre", Arch)
	w.Set("tokenizer.ggml.tokens", toks)
	w.Set("tokenizer.ggml.token_type", types)
	w.Set("tokenizer.ggml.merges", merges)
	w.Set("tokenizer.ggml.bos_token_id", uint32(first))
	w.Set("tokenizer.ggml.eos_token_id", uint32(first+1))
	w.Set("tokenizer.ggml.padding_token_id", uint32(first+2))
	w.Set("tokenizer.ggml.add_bos_token", false)
	w.Set("tokenizer.ggml.add_eos_token", false)
	w.Set("tokenizer.chat_template", chat.OfficialTemplate)
}

// WriteRandomHF writes a random-weight Spark checkpoint (config.json and
// model.safetensors in bf16) to dir, with the same values as the GGUF files
// of the same seed.
func WriteRandomHF(dir string, c Config, seed uint64) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := WriteHFConfig(dir, c); err != nil {
		return err
	}
	var ts []safetensors.Tensor
	for _, t := range RandomTensors(c) {
		rows := 1
		for _, d := range t.Dims[1:] {
			rows *= d
		}
		buf := make([]byte, 2*t.Dims[0]*rows)
		if err := encodeRows(t, quant.BF16, seed, buf); err != nil {
			return err
		}
		shape := make([]int, len(t.Dims))
		for i, d := range t.Dims {
			shape[len(shape)-1-i] = d
		}
		ts = append(ts, safetensors.Tensor{Name: t.HFName, DType: "BF16", Shape: shape, Data: buf})
	}
	var out bytes.Buffer
	if err := safetensors.Write(&out, ts, map[string]string{"format": "pt"}); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "model.safetensors"), out.Bytes(), 0o644)
}
