package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/droidgo/droidgo/model/gguf"
)

// richVocab returns the tokens, types and merges of testdata/rich-vocab.gguf.
func richVocab(t *testing.T) (toks []string, types []int32, merges []string) {
	t.Helper()
	f, err := gguf.Open(filepath.Join("testdata", "rich-vocab.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	toks, _ = f.Strings("tokenizer.ggml.tokens")
	merges, _ = f.Strings("tokenizer.ggml.merges")
	tt, _ := f.Ints("tokenizer.ggml.token_type")
	for _, x := range tt {
		types = append(types, int32(x))
	}
	return toks, types, merges
}

// TestGGUFConverterVocab loads a vocabulary laid out as llama.cpp's converter
// writes one: padded to the model's vocab_size with UNUSED "[PADn]" tokens,
// with the padding, add_bos/add_eos and chat template keys, and checks the
// ids are unchanged and the padding tokens are never matched in text.
func TestGGUFConverterVocab(t *testing.T) {
	toks, types, merges := richVocab(t)
	n := len(toks)
	for i := n; i < n+300; i++ {
		toks = append(toks, fmt.Sprintf("[PAD%d]", i))
		types = append(types, int32(TypeUnused))
	}
	w := gguf.NewWriter()
	w.Set("general.architecture", "spark2_5")
	w.Set("tokenizer.ggml.model", "gpt2")
	w.Set("tokenizer.ggml.pre", "spark2_5")
	w.Set("tokenizer.ggml.tokens", toks)
	w.Set("tokenizer.ggml.token_type", types)
	w.Set("tokenizer.ggml.merges", merges)
	w.Set("tokenizer.ggml.bos_token_id", uint32(0))
	w.Set("tokenizer.ggml.eos_token_id", uint32(1))
	w.Set("tokenizer.ggml.padding_token_id", uint32(2))
	w.Set("tokenizer.ggml.add_bos_token", false)
	w.Set("tokenizer.ggml.add_eos_token", false)
	w.Set("tokenizer.chat_template", "{{ messages }}")
	p := filepath.Join(t.TempDir(), "padded.gguf")
	if err := w.WriteFile(p); err != nil {
		t.Fatal(err)
	}
	tok, err := LoadGGUF(p)
	if err != nil {
		t.Fatal(err)
	}
	if tok.VocabSize() != n+300 || tok.Type(n) != TypeUnused || tok.IsSpecial(n) {
		t.Fatalf("size %d, type of %d = %d", tok.VocabSize(), n, tok.Type(n))
	}
	for _, c := range loadRef(t, "rich-vocab") {
		if got := tok.Encode(c.Text, true); !slices.Equal(got, c.IDs) && len(c.IDs)+len(got) > 0 {
			t.Errorf("%q: got %v want %v", c.Text, got, c.IDs)
		}
	}
	pad := fmt.Sprintf("[PAD%d]", n+5)
	if ids := tok.Encode(pad, true); slices.Contains(ids, n+5) || tok.Decode(ids) != pad {
		t.Errorf("%s encodes to %v", pad, ids)
	}
}

// TestHFTokenizerJSONLayout builds an HF directory the way tokenizers and
// transformers save one (all tokenizer.json fields, added tokens also in the
// vocabulary, merges as pairs, a Sequence pre-tokenizer, an
// added_tokens_decoder and AddedToken objects in tokenizer_config.json, ids
// missing from the vocabulary) and checks it tokenizes like the GGUF made from
// it.
func TestHFTokenizerJSONLayout(t *testing.T) {
	toks, types, merges := richVocab(t)
	g := loadTok(t, "rich-vocab")
	vocab := map[string]int{}
	var added []map[string]any
	decoder := map[string]any{}
	const hole = 200 // an id the checkpoint leaves out
	for id, s := range toks {
		if id == hole {
			continue
		}
		vocab[s] = id
		switch TokenType(types[id]) {
		case TypeControl, TypeUserDefined:
			a := map[string]any{"id": id, "content": s, "single_word": false, "lstrip": false, "rstrip": false,
				"normalized": false, "special": TokenType(types[id]) == TypeControl}
			added = append(added, a)
			decoder[fmt.Sprint(id)] = a
		}
	}
	pairs := make([][]string, len(merges))
	for i, m := range merges {
		l, r, _ := strings.Cut(m, " ")
		pairs[i] = []string{l, r}
	}
	tj := map[string]any{
		"version": "1.0", "truncation": nil, "padding": nil, "added_tokens": added, "normalizer": nil,
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": `\p{N}{1,3}`}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false},
		}},
		"post_processor": map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true},
		"decoder":        map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
		"model": map[string]any{"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": nil,
			"end_of_word_suffix": nil, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
			"vocab": vocab, "merges": pairs},
	}
	cfg := map[string]any{
		"add_bos_token": false, "add_eos_token": false, "added_tokens_decoder": decoder,
		"bos_token":                    map[string]any{"__type": "AddedToken", "content": toks[0], "lstrip": false, "normalized": false, "rstrip": false, "single_word": false},
		"eos_token":                    toks[1],
		"pad_token":                    nil,
		"clean_up_tokenization_spaces": false, "legacy": true, "model_max_length": 1048576,
		"tokenizer_class": "PreTrainedTokenizerFast", "chat_template": "{{ messages }}",
	}
	dir := t.TempDir()
	for name, v := range map[string]any{"tokenizer.json": tj, "tokenizer_config.json": cfg} {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if h.BOS() != 0 || h.EOS() != 1 || h.VocabSize() != g.VocabSize() || h.Type(hole) != TypeUnused {
		t.Fatalf("BOS %d EOS %d size %d, type of the hole %d", h.BOS(), h.EOS(), h.VocabSize(), h.Type(hole))
	}
	for _, c := range loadRef(t, "rich-vocab") {
		want := g.Encode(c.Text, true)
		if slices.Contains(want, hole) {
			continue
		}
		if got := h.Encode(c.Text, true); !slices.Equal(got, want) {
			t.Errorf("%q: got %v want %v", c.Text, got, want)
		}
	}
}

// An added token that is not special gets the converter's treatment: a
// control token when it looks like one, else user-defined with U+2581
// turned into a space.
func TestHFAddedTokenTypes(t *testing.T) {
	dir := t.TempDir()
	vocab := map[string]int{}
	for b := 0; b < 256; b++ {
		vocab[string(byteToRune[b])] = b
	}
	tj := map[string]any{
		"added_tokens": []map[string]any{
			{"id": 256, "content": "<|tool|>", "special": false},
			{"id": 257, "content": "<unused0>", "special": false},
			{"id": 258, "content": "my▁word", "special": false},
			{"id": 259, "content": "<start_of_turn>", "special": false},
		},
		"model": map[string]any{"type": "BPE", "vocab": vocab, "merges": []string{}},
	}
	data, _ := json.Marshal(tj)
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[int]TokenType{256: TypeControl, 257: TypeControl, 258: TypeUserDefined, 259: TypeUserDefined} {
		if h.Type(id) != want {
			t.Errorf("type of %q = %d, want %d", h.Token(id), h.Type(id), want)
		}
	}
	if got := h.Encode("a my word", false); !slices.Equal(got, []int{'a', ' ', 258}) {
		t.Errorf("user-defined token with a space: %v", got)
	}
}
