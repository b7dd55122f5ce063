package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/droidgo/droidgo/model/gguf"
)

type refCase struct {
	Text     string `json:"text"`
	IDs      []int  `json:"ids"`
	IDsPlain []int  `json:"ids_plain"`
}

func loadRef(t testing.TB, name string) []refCase {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "ref-"+name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Cases []refCase `json:"cases"`
	}
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Cases) == 0 {
		t.Fatal("no reference cases")
	}
	return ref.Cases
}

func loadTok(t testing.TB, name string) *Tokenizer {
	t.Helper()
	tok, err := LoadGGUF(filepath.Join("testdata", name+".gguf"))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestMatchesLlamaCpp compares ids with llama.cpp's on the hand-written
// corpus and on 600 random strings, for the peer's synthetic vocabulary and
// for the richer one with Spark's special tokens (testdata/gen_ref.mjs
// produced the references).
func TestMatchesLlamaCpp(t *testing.T) {
	for _, name := range []string{"tiny-vocab", "rich-vocab", "random-tiny-vocab", "random-rich-vocab"} {
		t.Run(name, func(t *testing.T) {
			tok := loadTok(t, strings.TrimPrefix(name, "random-"))
			for i, c := range loadRef(t, name) {
				for _, special := range []bool{true, false} {
					want := c.IDs
					if !special {
						want = c.IDsPlain
					}
					got := tok.Encode(c.Text, special)
					if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
						t.Errorf("case %d %q special=%v:\n got  %v\n want %v\n got pieces  %q\n want pieces %q",
							i, c.Text, special, got, want, pieces(tok, got), pieces(tok, want))
					}
				}
			}
		})
	}
}

func pieces(tok *Tokenizer, ids []int) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = tok.Piece(id)
	}
	return out
}

// TestRoundTrip uses the tiny vocabulary: the rich one deliberately lacks a
// merge result, which llama.cpp (and so this package) turns into lossy
// single-byte fallbacks.
func TestRoundTrip(t *testing.T) {
	tok := loadTok(t, "tiny-vocab")
	for _, c := range loadRef(t, "tiny-vocab") {
		if got := tok.Decode(tok.Encode(c.Text, true)); got != c.Text {
			t.Errorf("Decode(Encode(%q)) = %q", c.Text, got)
		}
	}
}

func TestSpecialTokens(t *testing.T) {
	tok := loadTok(t, "rich-vocab")
	if tok.BOS() != 0 || tok.EOS() != 1 {
		t.Errorf("BOS, EOS = %d, %d; want 0, 1", tok.BOS(), tok.EOS())
	}
	for _, s := range []string{"<think>", "</think>", "<tool_call>", "<arg_key>", "<｜end▁of▁sentence｜>"} {
		id, ok := tok.ID(s)
		if !ok || !tok.IsSpecial(id) {
			t.Fatalf("%q: id %d, found %v, special %v", s, id, ok, tok.IsSpecial(id))
		}
		if got := tok.Encode("a"+s+"b", true); len(got) != 3 || got[1] != id {
			t.Errorf("Encode(a%sb) = %v, want the special token %d in the middle", s, got, id)
		}
		if got := tok.Encode(s, false); slices.Contains(got, id) {
			t.Errorf("Encode(%q, special=false) = %v contains the control token", s, got)
		}
		if tok.Piece(id) != s {
			t.Errorf("Piece(%d) = %q, want %q", id, tok.Piece(id), s)
		}
	}
}

func TestInvalidUTF8(t *testing.T) {
	tok := loadTok(t, "rich-vocab")
	// llama.cpp replaces bytes it cannot decode with U+FFFD.
	for _, s := range []string{"a\xffb", "\xe4\xbd", "x\xe4\xbd<think>", "\xc0\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80"} {
		got := tok.Encode(s, true)
		want := tok.Encode(sanitize(s), true)
		if !slices.Equal(got, want) {
			t.Errorf("Encode(%q) = %v, want %v", s, got, want)
		}
		if d := tok.Decode(got); !utf8.ValidString(d) {
			t.Errorf("Decode(Encode(%q)) = %q is not valid UTF-8", s, d)
		}
	}
	if got := sanitize("a\xffb\xc0\x80"); got != "a\uFFFDb\x00" {
		t.Errorf("sanitize = %q", got)
	}
}

func TestDecoderNeverSplitsCharacters(t *testing.T) {
	tok := loadTok(t, "tiny-vocab") // mostly single-byte tokens: characters span tokens
	for _, c := range loadRef(t, "tiny-vocab") {
		ids := tok.Encode(c.Text, true)
		d := tok.NewDecoder()
		var b strings.Builder
		for _, id := range ids {
			p := d.Add(id)
			if !utf8.ValidString(p) {
				t.Fatalf("%q: piece %q is not valid UTF-8", c.Text, p)
			}
			b.WriteString(p)
		}
		b.WriteString(d.Flush())
		if b.String() != c.Text {
			t.Errorf("streamed %q, want %q", b.String(), c.Text)
		}
	}
	// A character the stream never completes comes out on Flush.
	d := tok.NewDecoder()
	id, _ := tok.ID(string(byteToRune[0xE4]))
	if got := d.Add(id); got != "" {
		t.Errorf("Add(lead byte) = %q, want it held", got)
	}
	if got := d.Flush(); got != "\xe4" {
		t.Errorf("Flush = %q", got)
	}
}

func TestNewErrors(t *testing.T) {
	for _, tc := range []struct {
		v    Vocab
		want string
	}{
		{Vocab{}, "no tokens"},
		{Vocab{Tokens: []string{"a"}, Pre: "llama3"}, "pre-tokenizer"},
		{Vocab{Tokens: []string{"a", "a"}, BOS: -1, EOS: -1}, "same text"},
		{Vocab{Tokens: []string{"a"}, BOS: 5, EOS: -1}, "outside"},
		{Vocab{Tokens: []string{"a", "b"}, Types: []TokenType{1}, BOS: -1, EOS: -1}, "token types"},
	} {
		_, err := New(tc.v)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want error containing %q", tc.v, err, tc.want)
		}
	}
}

func TestHFDir(t *testing.T) {
	// An HF directory written from the rich GGUF's vocabulary must tokenize
	// identically.
	g := loadTok(t, "rich-vocab")
	dir := t.TempDir()
	vocab := map[string]int{}
	var added []map[string]any
	for id := 0; id < g.VocabSize(); id++ {
		switch g.Type(id) {
		case TypeControl:
			added = append(added, map[string]any{"id": id, "content": g.Token(id), "special": true})
		case TypeUserDefined:
			added = append(added, map[string]any{"id": id, "content": g.Token(id), "special": false})
		default:
			vocab[g.Token(id)] = id
		}
	}
	f, err := gguf.Open(filepath.Join("testdata", "rich-vocab.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	merges, _ := f.Strings("tokenizer.ggml.merges")
	pairs := make([][]string, len(merges))
	for i, m := range merges {
		l, r, _ := strings.Cut(m, " ")
		pairs[i] = []string{l, r}
	}
	tj := map[string]any{"added_tokens": added, "model": map[string]any{"type": "BPE", "vocab": vocab, "merges": pairs}}
	write := func(name string, v any) {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("tokenizer.json", tj)
	write("tokenizer_config.json", map[string]any{"bos_token": "<｜start▁of▁sentence｜>", "eos_token": map[string]any{"content": "<｜end▁of▁sentence｜>"}})
	h, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if h.BOS() != 0 || h.EOS() != 1 || h.VocabSize() != g.VocabSize() {
		t.Fatalf("BOS %d EOS %d size %d", h.BOS(), h.EOS(), h.VocabSize())
	}
	for _, c := range loadRef(t, "rich-vocab") {
		if got := h.Encode(c.Text, true); !slices.Equal(got, c.IDs) && len(c.IDs)+len(got) > 0 {
			t.Errorf("%q: got %v want %v", c.Text, got, c.IDs)
		}
	}
}

func TestLongWhitespaceAndCJK(t *testing.T) {
	// Long runs exercise the heap-based merge and the lookahead rule without
	// a reference: round trip, and whitespace splitting by hand.
	tok := loadTok(t, "tiny-vocab")
	for _, s := range []string{strings.Repeat(" ", 5000) + "x", strings.Repeat("漢字", 3000), strings.Repeat("ab ", 2000)} {
		if got := tok.Decode(tok.Encode(s, true)); got != s {
			t.Errorf("round trip of a %d-byte text failed", len(s))
		}
	}
	var words []string
	var sp splitter
	sp.split("a   b\t\n c  ", func(w string) { words = append(words, w) })
	want := []string{"a", "  ", " b", "\t\n", " c", "  "}
	if !slices.Equal(words, want) {
		t.Errorf("split = %q, want %q", words, want)
	}
}

func ExampleTokenizer_Encode() {
	tok, err := LoadGGUF("testdata/rich-vocab.gguf")
	if err != nil {
		panic(err)
	}
	ids := tok.Encode("<think>hi</think>", true)
	fmt.Println(len(ids), tok.Decode(ids))
	// Output: 3 <think>hi</think>
}

func TestUnicode151Classes(t *testing.T) {
	for _, tc := range []struct {
		r    rune
		want uint16
	}{{0x2EBF0, fL}, {0x2EE5D, fL}, {0x2FFC, fPS}, {0x31EF, fPS}, {0x4E00, fL}, {0x0301, fM}, {0x00A0, fWS}, {0x200B, 0}, {0x7F, 0}} {
		if got := classOf(tc.r); got != tc.want {
			t.Errorf("classOf(%U) = %#x, want %#x", tc.r, got, tc.want)
		}
	}
}

func TestFromGGUFErrors(t *testing.T) {
	base := func(w *gguf.Writer) {
		w.Set("general.architecture", "spark2_5")
		w.Set("tokenizer.ggml.model", "gpt2")
		w.Set("tokenizer.ggml.pre", "spark2_5")
		w.Set("tokenizer.ggml.tokens", []string{"a", "b", "ab"})
		w.Set("tokenizer.ggml.merges", []string{"a b"})
		w.Set("tokenizer.ggml.token_type", []int32{1, 1, 1})
	}
	for _, tc := range []struct {
		name string
		edit func(w *gguf.Writer)
		want string // "" = loads
	}{
		{"ok", func(*gguf.Writer) {}, ""},
		{"llama tokenizer", func(w *gguf.Writer) { w.Set("tokenizer.ggml.model", "llama") }, "not supported"},
		{"other pre", func(w *gguf.Writer) { w.Set("tokenizer.ggml.pre", "qwen2") }, "pre-tokenizer"},
		{"tokens not strings", func(w *gguf.Writer) { w.Set("tokenizer.ggml.tokens", []int32{1}) }, "tokenizer.ggml.tokens"},
		{"merges not strings", func(w *gguf.Writer) { w.Set("tokenizer.ggml.merges", int32(3)) }, "tokenizer.ggml.merges"},
		{"short types", func(w *gguf.Writer) { w.Set("tokenizer.ggml.token_type", []int32{1}) }, "token_type"},
		{"types not ints", func(w *gguf.Writer) { w.Set("tokenizer.ggml.token_type", []string{"x", "y", "z"}) }, "token_type"},
	} {
		w := gguf.NewWriter()
		base(w)
		tc.edit(w)
		p := filepath.Join(t.TempDir(), "v.gguf")
		if err := w.WriteFile(p); err != nil {
			t.Fatal(err)
		}
		tok, err := LoadGGUF(p)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want == "" && !slices.Equal(tok.Encode("ab", false), []int{2}):
			t.Errorf("%s: Encode(ab) = %v", tc.name, tok.Encode("ab", false))
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
}

func TestConcurrentEncode(t *testing.T) {
	tok := loadTok(t, "rich-vocab")
	cases := loadRef(t, "random-rich-vocab")[:100]
	done := make(chan string)
	for w := 0; w < 4; w++ {
		go func() {
			for _, c := range cases {
				if got := tok.Encode(c.Text, true); !slices.Equal(got, c.IDs) && len(c.IDs) > 0 {
					done <- fmt.Sprintf("%q: %v", c.Text, got)
					return
				}
			}
			done <- ""
		}()
	}
	for w := 0; w < 4; w++ {
		if msg := <-done; msg != "" {
			t.Error(msg)
		}
	}
}
