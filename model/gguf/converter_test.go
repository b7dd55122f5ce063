package gguf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/droidgo/droidgo/model/quant"
)

// converterImage builds a GGUF the way llama.cpp's convert_hf_to_gguf.py and
// llama-quantize lay out an official Spark-X2.5 file: general.* keys first
// (strings, string arrays, integers of several widths), per-layer integer
// arrays as int32 arrays, a large token list with non-ASCII and odd texts, a
// chat template, and a Q4_K_M mix of tensor types.
func converterImage(t testing.TB, version uint32, align uint32, nTokens int) []byte {
	t.Helper()
	w := NewWriter()
	if align != 0 {
		w.Set("general.alignment", align)
	}
	w.Set("general.architecture", "spark2_5")
	w.Set("general.type", "model")
	w.Set("general.name", "Spark X2.5 1.7B")
	w.Set("general.size_label", "1.7B")
	w.Set("general.license", "apache-2.0")
	w.Set("general.tags", []string{"text-generation", "中文"})
	w.Set("general.languages", []string{"en", "zh"})
	w.Set("general.file_type", uint32(15))
	w.Set("general.quantization_version", uint32(2))
	w.Set("spark2_5.block_count", uint32(4))
	w.Set("spark2_5.feed_forward_length", []int32{512, 512, 512, 512})
	w.Set("spark2_5.attention.head_count", []int32{8, 8, 8, 8})
	w.Set("spark2_5.attention.layer_norm_rms_epsilon", float32(1e-6))
	w.Set("spark2_5.attention.sliding_window_pattern", []bool{true, true, true, false})
	w.Set("spark2_5.rope.freq_base", float32(5e6))
	toks := make([]string, nTokens)
	types := make([]int32, nTokens)
	for i := range toks {
		toks[i] = fmt.Sprintf("tok%d", i)
		types[i] = 1
	}
	odd := []string{"<｜start▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "Ġ", "\n", "Ċ", "ĠĠĠ", "\x00x", "\xff\xfe", "😀", "<think>"}
	copy(toks, odd)
	types[0], types[1], types[9] = 3, 3, 4
	types[nTokens-1] = 5
	w.Set("tokenizer.ggml.model", "gpt2")
	w.Set("tokenizer.ggml.pre", "spark2_5")
	w.Set("tokenizer.ggml.tokens", toks)
	w.Set("tokenizer.ggml.token_type", types)
	w.Set("tokenizer.ggml.merges", []string{"Ġ Ġ", "t o"})
	w.Set("tokenizer.ggml.bos_token_id", uint32(0))
	w.Set("tokenizer.ggml.eos_token_id", uint32(1))
	w.Set("tokenizer.ggml.padding_token_id", uint32(2))
	w.Set("tokenizer.ggml.add_bos_token", false)
	w.Set("tokenizer.chat_template", "{% for m in messages %}{{ m.content }}{% endfor %}")
	w.AddTensor("token_embd.weight", quant.Q6_K, []int{256, 3}, make([]byte, 3*quant.Q6_K.RowSize(256)))
	w.AddTensor("output_norm.weight", quant.F32, []int{256}, make([]byte, 1024))
	w.AddTensor("blk.0.attn_qkv.weight", quant.Q4_K, []int{256, 2}, make([]byte, 2*quant.Q4_K.RowSize(256)))
	w.AddTensor("blk.0.attn_gate.weight", quant.Q5_0, []int{256, 8}, make([]byte, 8*quant.Q5_0.RowSize(256)))
	w.AddTensor("blk.0.ffn_up.weight", 23 /* IQ4_XS */, []int{256, 2}, make([]byte, 2*136))
	w.AddTensor("blk.0.ffn_down.weight", 20 /* IQ4_NL */, []int{64, 1}, make([]byte, 2*18))
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	img := buf.Bytes()
	binary.LittleEndian.PutUint32(img[4:], version)
	return img
}

func TestConverterLayout(t *testing.T) {
	for _, c := range []struct {
		version, align uint32
	}{{3, 0}, {2, 0}, {3, 64}, {2, 64}, {3, 32}} {
		t.Run(fmt.Sprintf("v%d-align%d", c.version, c.align), func(t *testing.T) {
			f, err := OpenBytes(converterImage(t, c.version, c.align, 131072))
			if err != nil {
				t.Fatal(err)
			}
			want := int(c.align)
			if want == 0 {
				want = DefaultAlignment
			}
			if f.Version != c.version || f.Alignment != want || f.DataOffset%int64(want) != 0 {
				t.Errorf("version %d alignment %d data offset %d", f.Version, f.Alignment, f.DataOffset)
			}
			for _, tn := range f.Tensors() {
				if tn.Offset%uint64(want) != 0 {
					t.Errorf("%s at unaligned offset %d", tn.Name, tn.Offset)
				}
			}
			toks, ok := f.Strings("tokenizer.ggml.tokens")
			if !ok || len(toks) != 131072 || toks[0] != "<｜start▁of▁sentence｜>" || toks[7] != "\xff\xfe" || toks[6] != "\x00x" {
				t.Errorf("token list: %d entries, first %q", len(toks), toks[:10])
			}
			types, ok := f.Ints("tokenizer.ggml.token_type")
			if !ok || len(types) != 131072 || types[0] != 3 || types[131071] != 5 {
				t.Errorf("token types wrong")
			}
			ff, ok := f.Ints("spark2_5.feed_forward_length")
			if !ok || len(ff) != 4 || ff[3] != 512 {
				t.Errorf("feed_forward_length array: %v", ff)
			}
			if _, ok := f.Uint("spark2_5.feed_forward_length"); ok {
				t.Errorf("an array read as a scalar")
			}
			if tags, _ := f.Strings("general.tags"); len(tags) != 2 || tags[1] != "中文" {
				t.Errorf("general.tags %q", tags)
			}
			if s := f.TypeSummary(); s != "F32:1 Q5_0:1 Q4_K:1 Q6_K:1 IQ4_NL:1 IQ4_XS:1" {
				t.Errorf("type summary %q", s)
			}
			iq, _ := f.Tensor("blk.0.ffn_up.weight")
			if iq.TypeName() != "IQ4_XS" || len(iq.Data) != 2*136 {
				t.Errorf("IQ4_XS tensor: %s, %d bytes", iq.TypeName(), len(iq.Data))
			}
		})
	}
}

// A file using a type newer than this reader still fails with the type's number.
func TestUnknownTypeNamed(t *testing.T) {
	img := converterImage(t, 3, 0, 16)
	i := bytes.Index(img, []byte("blk.0.ffn_up.weight")) + len("blk.0.ffn_up.weight")
	binary.LittleEndian.PutUint32(img[i+4+16:], 99)
	_, err := OpenBytes(img)
	if err == nil || !strings.Contains(err.Error(), "unknown type 99") {
		t.Fatalf("err = %v", err)
	}
}

// TestLlamaCppQuantizedFile reads a file written by llama.cpp itself
// (llama_model_quantize to Q4_K_M, release v0.5.0 via the peer toolkit), so
// the reader is checked against llama.cpp's own GGUF writer: key order and
// types, padding, alignment, and the Q4_K/Q6_K mix it picks. The weights
// are constant (0.5) so the file compresses to a few KB in git.
//
// Regenerate (development only): make a "q" preset F32 file with
// `droidgo model make-random --arch-size q --out q.gguf`, overwrite its
// tensor data with 0.5f, then `sparkpeer quantize q.gguf
// testdata/llamacpp-q4_k_m.gguf Q4_K_M 1`.
func TestLlamaCppQuantizedFile(t *testing.T) {
	f, err := Open("testdata/llamacpp-q4_k_m.gguf")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Version != 3 || f.Alignment != DefaultAlignment || f.DataOffset%DefaultAlignment != 0 {
		t.Errorf("version %d alignment %d data offset %d", f.Version, f.Alignment, f.DataOffset)
	}
	if s := f.TypeSummary(); s != "F32:9 Q4_K:20 Q6_K:5" {
		t.Errorf("types %s", s)
	}
	if ft, _ := f.Uint("general.file_type"); ft != 15 {
		t.Errorf("file_type %d, want 15 (MOSTLY_Q4_K_M)", ft)
	}
	if qv, _ := f.Uint("general.quantization_version"); qv != 2 {
		t.Errorf("quantization_version %d", qv)
	}
	if p, _ := f.Bools("spark2_5.attention.sliding_window_pattern"); len(p) != 4 || !p[0] || p[3] {
		t.Errorf("pattern %v", p)
	}
	emb, _ := f.Tensor("token_embd.weight")
	if emb.Type != quant.Q6_K || len(emb.Data) != 256*quant.Q6_K.RowSize(256) {
		t.Errorf("token_embd: %s, %d bytes", emb.TypeName(), len(emb.Data))
	}
	var end uint64
	for _, tn := range f.Tensors() {
		if tn.Offset < end {
			t.Errorf("%s overlaps the previous tensor", tn.Name)
		}
		end = tn.Offset + uint64(len(tn.Data))
	}
	if int64(end)+f.DataOffset > f.Size {
		t.Errorf("data ends at %d past the file size %d", int64(end)+f.DataOffset, f.Size)
	}
}

// BenchmarkParseFullVocab parses a header holding a 131072-entry token list
// and type array, the bulk of an official file's metadata.
func BenchmarkParseFullVocab(b *testing.B) {
	img := converterImage(b, 3, 0, 131072)
	b.SetBytes(int64(len(img)))
	for b.Loop() {
		if _, err := OpenBytes(img); err != nil {
			b.Fatal(err)
		}
	}
}
