package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/droidgo/droidgo/model/gguf"
)

// FromGGUF builds the tokenizer described by a GGUF file's tokenizer.ggml.*
// metadata.
func FromGGUF(f *gguf.File) (*Tokenizer, error) {
	if m, _ := f.String("tokenizer.ggml.model"); m != "gpt2" {
		return nil, fmt.Errorf("tokenizer model %q is not supported (want byte-level BPE, \"gpt2\")", m)
	}
	var v Vocab
	var ok bool
	if v.Tokens, ok = f.Strings("tokenizer.ggml.tokens"); !ok {
		return nil, errors.New("GGUF has no tokenizer.ggml.tokens string array")
	}
	if v.Merges, ok = f.Strings("tokenizer.ggml.merges"); !ok {
		return nil, errors.New("GGUF has no tokenizer.ggml.merges string array")
	}
	if _, present := f.Value("tokenizer.ggml.token_type"); present {
		types, ok := f.Ints("tokenizer.ggml.token_type")
		if !ok || len(types) < len(v.Tokens) {
			return nil, fmt.Errorf("GGUF tokenizer.ggml.token_type is not an integer array of %d entries", len(v.Tokens))
		}
		v.Types = make([]TokenType, len(v.Tokens))
		for i := range v.Types {
			v.Types[i] = TokenType(types[i])
		}
	}
	v.BOS, v.EOS = -1, -1
	if id, ok := f.Uint("tokenizer.ggml.bos_token_id"); ok && id < uint64(len(v.Tokens)) {
		v.BOS = int(id)
	}
	if id, ok := f.Uint("tokenizer.ggml.eos_token_id"); ok && id < uint64(len(v.Tokens)) {
		v.EOS = int(id)
	}
	v.Pre, _ = f.String("tokenizer.ggml.pre")
	if v.Pre == "" {
		return nil, errors.New("GGUF has no tokenizer.ggml.pre (want \"spark2_5\")")
	}
	return New(v)
}

// LoadGGUF opens a GGUF file and builds its tokenizer.
func LoadGGUF(path string) (*Tokenizer, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := FromGGUF(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return t, nil
}

// Load builds the tokenizer of a model path: a GGUF file, or an HF model
// directory with tokenizer.json.
func Load(path string) (*Tokenizer, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return FromHFDir(path)
	}
	return LoadGGUF(path)
}

// hfTokenizer is the part of an HF tokenizer.json this package reads.
type hfTokenizer struct {
	AddedTokens []hfAdded `json:"added_tokens"`
	Model       struct {
		Type   string          `json:"type"`
		Vocab  map[string]int  `json:"vocab"`
		Merges json.RawMessage `json:"merges"`
	} `json:"model"`
}

type hfAdded struct {
	ID      int    `json:"id"`
	Content string `json:"content"`
	Special bool   `json:"special"`
}

// hfConfig is the part of tokenizer_config.json this package reads.
type hfConfig struct {
	AddedTokensDecoder map[string]hfAdded `json:"added_tokens_decoder"`
	BOSToken           json.RawMessage    `json:"bos_token"`
	EOSToken           json.RawMessage    `json:"eos_token"`
}

// FromHFDir builds the tokenizer of an HF model directory from its
// tokenizer.json, the added tokens of tokenizer_config.json, and its
// bos_token / eos_token (or config.json's bos_token_id / eos_token_id).
// Token types follow llama.cpp's converter: added tokens marked special, or
// that look special (<|...|>, <｜...｜>), are control tokens, other added
// tokens user-defined, and ids missing from the vocabulary become unused
// "[PADn]" tokens.
func FromHFDir(dir string) (*Tokenizer, error) {
	data, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return nil, err
	}
	var tj hfTokenizer
	if err := json.Unmarshal(data, &tj); err != nil {
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	if tj.Model.Type != "" && tj.Model.Type != "BPE" {
		return nil, fmt.Errorf("tokenizer.json: model type %q is not supported (want BPE)", tj.Model.Type)
	}
	merges, err := hfMerges(tj.Model.Merges)
	if err != nil {
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	var cfg hfConfig
	if data, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json")); err == nil {
		if err := json.Unmarshal(data, &cfg); err != nil {
			return nil, fmt.Errorf("tokenizer_config.json: %w", err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}

	byID := map[int]string{}
	types := map[int]TokenType{}
	n := 0
	set := func(id int, s string, typ TokenType) error {
		if id < 0 || id >= 1<<24 {
			return fmt.Errorf("token id %d is out of range", id)
		}
		byID[id] = s
		types[id] = typ
		n = max(n, id+1)
		return nil
	}
	for s, id := range tj.Model.Vocab {
		if err := set(id, s, TypeNormal); err != nil {
			return nil, fmt.Errorf("tokenizer.json: %w", err)
		}
	}
	added := append([]hfAdded(nil), tj.AddedTokens...)
	for k, a := range cfg.AddedTokensDecoder {
		if _, err := fmt.Sscan(k, &a.ID); err != nil {
			return nil, fmt.Errorf("tokenizer_config.json: added token key %q is not an id", k)
		}
		added = append(added, a)
	}
	for _, a := range added {
		typ, text := TypeUserDefined, a.Content
		if a.Special || looksSpecial(a.Content) {
			typ = TypeControl
		} else {
			// The converter pre-normalizes the SentencePiece space in
			// user-defined tokens, and llama.cpp matches the result.
			text = strings.ReplaceAll(text, "\u2581", " ")
		}
		if err := set(a.ID, text, typ); err != nil {
			return nil, fmt.Errorf("added tokens: %w", err)
		}
	}
	v := Vocab{Tokens: make([]string, n), Types: make([]TokenType, n), Merges: merges, BOS: -1, EOS: -1, Pre: PreSpark}
	for i := range n {
		s, ok := byID[i]
		if !ok {
			v.Tokens[i], v.Types[i] = fmt.Sprintf("[PAD%d]", i), TypeUnused
			continue
		}
		v.Tokens[i], v.Types[i] = s, types[i]
	}
	lookup := func(raw json.RawMessage) int {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			var obj struct {
				Content string `json:"content"`
			}
			if json.Unmarshal(raw, &obj) != nil {
				return -1
			}
			s = obj.Content
		}
		for id, t := range byID {
			if t == s && s != "" {
				return id
			}
		}
		return -1
	}
	v.BOS, v.EOS = lookup(cfg.BOSToken), lookup(cfg.EOSToken)
	if v.BOS < 0 || v.EOS < 0 {
		var mc struct {
			BOS *int `json:"bos_token_id"`
			EOS *int `json:"eos_token_id"`
		}
		if data, err := os.ReadFile(filepath.Join(dir, "config.json")); err == nil && json.Unmarshal(data, &mc) == nil {
			if v.BOS < 0 && mc.BOS != nil && *mc.BOS < n {
				v.BOS = *mc.BOS
			}
			if v.EOS < 0 && mc.EOS != nil && *mc.EOS < n {
				v.EOS = *mc.EOS
			}
		}
	}
	return New(v)
}

// hfMerges reads merges written either as "a b" strings or as [a, b] pairs.
func hfMerges(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 {
		return nil, errors.New("model has no merges")
	}
	var strs []string
	if err := json.Unmarshal(raw, &strs); err == nil {
		return strs, nil
	}
	var pairs [][]string
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return nil, errors.New("merges are neither strings nor pairs of strings")
	}
	out := make([]string, len(pairs))
	for i, p := range pairs {
		if len(p) != 2 {
			return nil, fmt.Errorf("merge %d has %d parts, want 2", i, len(p))
		}
		out[i] = p[0] + " " + p[1]
	}
	return out, nil
}

// looksSpecial mirrors does_token_look_special of llama.cpp's converter,
// which marks added tokens that look like control tokens as such even when
// not flagged special.
func looksSpecial(s string) bool {
	switch s {
	case "<pad>", "<mask>", "<2mass>", "[@BOS@]":
		return true
	}
	return (strings.HasPrefix(s, "<|") && strings.HasSuffix(s, "|>")) ||
		(strings.HasPrefix(s, "<｜") && strings.HasSuffix(s, "｜>")) ||
		(strings.HasPrefix(s, "<unused") && strings.HasSuffix(s, ">"))
}
