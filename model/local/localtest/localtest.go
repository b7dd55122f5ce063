// Package localtest makes tiny random-weight Spark models with a
// Spark-shaped vocabulary (byte-level BPE plus Spark's special tokens as
// control tokens: <think>, </think>, <tool_call>, <arg_key>, ...,
// <｜end▁of▁sentence｜>) for end-to-end tests of the in-process backend.
// The weights are random, so the output is garbage, but every stage runs:
// template, tokenizer, prefill, cache, sampling, special tokens, parsing.
package localtest

import (
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/droidgo/droidgo/model/chat"
	"github.com/droidgo/droidgo/model/gguf"
	"github.com/droidgo/droidgo/model/quant"
	"github.com/droidgo/droidgo/model/spark"
)

// richVocab is model/tokenizer's rich-vocab.gguf: a vocabulary-only GGUF
// (757 tokens) with merges learned from a small multilingual corpus and
// Spark's special tokens.
//
//go:embed testdata/rich-vocab.gguf
var richVocab []byte

// Config is the default shape: small enough that a prompt of a few
// thousand tokens prefills in well under a second.
//
// Window is larger than any test prompt: the engine's sliding-window ring
// holds Window+512 positions, so with the real model's 512 a new prompt can
// reuse the cache only if it diverges at most ~513 positions before the end
// of what is cached. A test that wants to see that limit sets a small
// Window.
func Config() spark.Config {
	return spark.Config{Layers: 2, Hidden: 64, FFN: 128, Heads: 2, KVHeads: 1, HeadDim: 32,
		Context: 16384, Eps: 1e-6, Window: 8192, Sliding: []bool{true, false},
		RopeThetaFull: 5e6, RopeThetaSWA: 1e4, RopeDimsFull: 16, RopeDimsSWA: 32}
}

// Write writes a random Spark model with config c (Vocab is set from the
// vocabulary) to path, F32 weights from spark.RandomTensors with seed. The
// official chat template is embedded unless template is non-empty.
func Write(path string, c spark.Config, seed uint64, template string) error {
	return WriteType(path, c, seed, template, "")
}

// WriteType is Write with the weights stored as fileType (as for
// spark.TensorType, e.g. "q4_k_m"; "" is F32), quantised by package quant.
// K-quant types need c.Hidden and c.FFN to be multiples of 256.
func WriteType(path string, c spark.Config, seed uint64, template, fileType string) error {
	v, err := gguf.OpenBytes(richVocab)
	if err != nil {
		return err
	}
	toks, ok := v.Strings("tokenizer.ggml.tokens")
	if !ok {
		return fmt.Errorf("vocabulary has no tokens")
	}
	c.Vocab = len(toks)
	if err := c.Validate(); err != nil {
		return err
	}
	w := gguf.NewWriter()
	c.SetGGUF(w)
	w.Set("general.name", "Spark-X2.5-random-rich-vocab")
	for _, k := range v.Keys() {
		if strings.HasPrefix(k, "tokenizer.") {
			val, _ := v.Value(k)
			w.Set(k, val)
		}
	}
	if template == "" {
		template = chat.OfficialTemplate
	}
	w.Set("tokenizer.chat_template", template)
	for _, t := range spark.RandomTensors(c) {
		t := t
		if fileType != "" {
			typ, err := spark.TensorType(c, t, fileType)
			if err != nil {
				return err
			}
			if typ != quant.F32 {
				w.AddTensorFunc(t.Name, typ, t.Dims, func(buf []byte) error {
					row := make([]float32, t.Dims[0])
					rb := typ.RowSize(len(row))
					for r := 0; r*rb < len(buf); r++ {
						t.FillRow(seed, r, row)
						if err := quant.QuantizeRow(typ, row, buf[r*rb:(r+1)*rb]); err != nil {
							return fmt.Errorf("%s row %d: %w", t.Name, r, err)
						}
					}
					return nil
				})
				continue
			}
		}
		w.AddTensorFunc(t.Name, quant.F32, t.Dims, func(buf []byte) error {
			row := make([]float32, t.Dims[0])
			for r := 0; r*len(row)*4 < len(buf); r++ {
				t.FillRow(seed, r, row)
				for i, x := range row {
					binary.LittleEndian.PutUint32(buf[(r*len(row)+i)*4:], math.Float32bits(x))
				}
			}
			return nil
		})
	}
	return w.WriteFile(path)
}

// Model writes a model with Config() and seed into a temporary directory
// of t and returns its path.
func Model(t testing.TB, seed uint64) string {
	t.Helper()
	return ModelWith(t, Config(), seed)
}

// ModelWith is Model with a given shape.
func ModelWith(t testing.TB, c spark.Config, seed uint64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), fmt.Sprintf("spark-rich-%d.gguf", seed))
	if err := Write(path, c, seed, ""); err != nil {
		t.Fatalf("write random model: %v", err)
	}
	return path
}

// WriteHF writes the same kind of model as an HF directory: config.json and
// model.safetensors (bf16, spark.WriteRandomHF), tokenizer.json with the
// vocabulary, and tokenizer_config.json with the official chat template.
func WriteHF(dir string, c spark.Config, seed uint64) error {
	v, err := gguf.OpenBytes(richVocab)
	if err != nil {
		return err
	}
	toks, _ := v.Strings("tokenizer.ggml.tokens")
	types, _ := v.Ints("tokenizer.ggml.token_type")
	merges, _ := v.Strings("tokenizer.ggml.merges")
	if len(types) != len(toks) {
		return fmt.Errorf("vocabulary has %d tokens and %d types", len(toks), len(types))
	}
	c.Vocab = len(toks)
	if err := spark.WriteRandomHF(dir, c, seed); err != nil {
		return err
	}
	type added struct {
		ID      int    `json:"id"`
		Content string `json:"content"`
		Special bool   `json:"special"`
	}
	var tj struct {
		AddedTokens []added `json:"added_tokens"`
		Model       struct {
			Type   string         `json:"type"`
			Vocab  map[string]int `json:"vocab"`
			Merges []string       `json:"merges"`
		} `json:"model"`
	}
	tj.Model.Type, tj.Model.Vocab, tj.Model.Merges = "BPE", map[string]int{}, merges
	for id, s := range toks {
		switch types[id] {
		case 3: // control
			tj.AddedTokens = append(tj.AddedTokens, added{id, s, true})
		case 4: // user-defined
			tj.AddedTokens = append(tj.AddedTokens, added{id, s, false})
		default:
			tj.Model.Vocab[s] = id
		}
	}
	data, err := json.Marshal(tj)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), data, 0o644); err != nil {
		return err
	}
	data, err = json.Marshal(map[string]any{
		"bos_token":     toks[0],
		"eos_token":     toks[1],
		"chat_template": chat.OfficialTemplate,
	})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), data, 0o644)
}
