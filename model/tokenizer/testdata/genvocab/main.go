// Command genvocab writes the tokenizer test vocabularies (development time
// only; its outputs are committed):
//
//	go run ./model/tokenizer/testdata/genvocab TINY.gguf
//
// TINY.gguf is the peer's tiny reference model (../shared/peer/ref/tiny/
// tiny-f32.gguf). It writes, next to this directory:
//   - tiny-vocab.gguf: TINY's metadata without its tensors (its synthetic
//     byte-level vocabulary, tokenizer.ggml.pre = spark2_5);
//   - rich-vocab.gguf: the same model metadata with a richer vocabulary:
//     merges learned from corpus.json, Spark's special tokens as control
//     tokens, a few user-defined and overlapping special tokens, and one merge
//     whose result is missing from the vocabulary (llama.cpp then falls back
//     to single-byte tokens).
//
// Both load in llama.cpp with vocab_only (see gen_ref.mjs).
package main

import (
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/droidgo/droidgo/model/gguf"
)

func main() {
	if len(os.Args) != 2 {
		log.Fatal("usage: genvocab TINY.gguf")
	}
	dir := "model/tokenizer/testdata"
	src, err := gguf.Open(os.Args[1])
	if err != nil {
		log.Fatal(err)
	}
	defer src.Close()

	w := gguf.NewWriter()
	for _, k := range src.Keys() {
		v, _ := src.Value(k)
		w.Set(k, v)
	}
	must(w.WriteFile(filepath.Join(dir, "tiny-vocab.gguf")))

	var corpus []string
	data, err := os.ReadFile(filepath.Join(dir, "corpus.json"))
	must(err)
	must(json.Unmarshal(data, &corpus))

	tokens, types, merges := richVocab(corpus)
	w = gguf.NewWriter()
	for _, k := range src.Keys() {
		if strings.HasPrefix(k, "tokenizer.") {
			continue
		}
		v, _ := src.Value(k)
		if k == "spark2_5.vocab_size" {
			v = uint32(len(tokens))
		}
		w.Set(k, v)
	}
	w.Set("tokenizer.ggml.model", "gpt2")
	w.Set("tokenizer.ggml.pre", "spark2_5")
	w.Set("tokenizer.ggml.tokens", tokens)
	w.Set("tokenizer.ggml.token_type", types)
	w.Set("tokenizer.ggml.merges", merges)
	w.Set("tokenizer.ggml.bos_token_id", uint32(0))
	w.Set("tokenizer.ggml.eos_token_id", uint32(1))
	w.Set("tokenizer.ggml.padding_token_id", uint32(2))
	w.Set("tokenizer.ggml.add_bos_token", false)
	w.Set("tokenizer.ggml.add_eos_token", false)
	must(w.WriteFile(filepath.Join(dir, "rich-vocab.gguf")))
	fmt.Printf("rich vocabulary: %d tokens, %d merges\n", len(tokens), len(merges))
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

// byteLevel is GPT-2's byte-to-unicode table.
func byteLevel() [256]string {
	var t [256]string
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			t[b] = string(rune(b))
		} else {
			t[b] = string(rune(256 + n))
			n++
		}
	}
	return t
}

const (
	normal      = 1
	control     = 3
	userDefined = 4
)

func richVocab(corpus []string) (tokens []string, types []int32, merges []string) {
	add := func(s string, typ int32) {
		tokens = append(tokens, s)
		types = append(types, typ)
	}
	for _, s := range []string{"<｜start▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜▁pad▁｜>", "<think>", "</think>"} {
		add(s, control)
	}
	bl := byteLevel()
	for b := 0; b < 256; b++ {
		add(bl[b], normal)
	}

	// Training words: a rough pre-split is enough to get realistic merges.
	re := regexp.MustCompile(`\s?\p{L}+|\p{N}|\s?[\p{P}\p{S}]+|\s+`)
	counts := map[string]int{}
	text := strings.Join(corpus, "\n") + "\n" + strings.Repeat("the and of to in is that for it with as on be at by this from or have an they which one you were all we her she there would their will when who him been has more if no out do so can what up said about other into than its time only could new them man some these then two first may any like now my such make over our even most after also did many before must through back years where much your way well down should because long each just state people those too how little good very make still own see men work last here thing give most \u00e9t\u00e9 na\u00efve \u4f60\u597d\u4e16\u754c \u3072\u3089\u304c\u306a ", 3)
	words := map[string][]string{}
	for _, w := range re.FindAllString(text, -1) {
		counts[w]++
		if _, ok := words[w]; !ok {
			var syms []string
			for i := 0; i < len(w); i++ {
				syms = append(syms, bl[w[i]])
			}
			words[w] = syms
		}
	}
	keys := make([]string, 0, len(words))
	for w := range words {
		keys = append(keys, w)
	}
	sort.Strings(keys)
	inVocab := map[string]bool{}
	for _, t := range tokens {
		inVocab[t] = true
	}
	const nMerges = 900
	const dropAt = 40 // this merge's result stays out of the vocabulary
	for m := 0; m < nMerges; m++ {
		pairs := map[[2]string]int{}
		for _, w := range keys {
			s := words[w]
			for i := 0; i+1 < len(s); i++ {
				pairs[[2]string{s[i], s[i+1]}] += counts[w]
			}
		}
		var best [2]string
		bestN := 0
		for p, n := range pairs {
			if n > bestN || (n == bestN && p[0]+" "+p[1] < best[0]+" "+best[1]) {
				best, bestN = p, n
			}
		}
		if bestN < 2 {
			break
		}
		merges = append(merges, best[0]+" "+best[1])
		joined := best[0] + best[1]
		if m != dropAt && !inVocab[joined] {
			add(joined, normal)
			inVocab[joined] = true
		}
		for _, w := range keys {
			s := words[w]
			out := s[:0]
			for i := 0; i < len(s); i++ {
				if i+1 < len(s) && s[i] == best[0] && s[i+1] == best[1] {
					out = append(out, joined)
					i++
				} else {
					out = append(out, s[i])
				}
			}
			words[w] = out
		}
	}
	for _, s := range []string{"<|System|>", "<|User|>", "<|Tool|>", "<|Bot|>", "<tool_call>", "</tool_call>",
		"<tool_response>", "</tool_response>", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>", "<|A|>"} {
		add(s, control)
	}
	add("<custom_ud>", userDefined)
	add("|><|B|>", userDefined)
	return tokens, types, merges
}
