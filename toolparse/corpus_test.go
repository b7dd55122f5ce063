package toolparse

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of the corpus")

// corpusCase is one raw model output from testdata/corpus. A name ending
// in .think.txt is parsed as an output whose prompt opened <think>.
type corpusCase struct {
	name string
	text string
	opts Options
}

func loadCorpus(t testing.TB) []corpusCase {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "corpus", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no corpus files")
	}
	var out []corpusCase
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(p), ".txt")
		out = append(out, corpusCase{
			name: name,
			text: string(b),
			opts: Options{InThinking: strings.HasSuffix(name, ".think")},
		})
	}
	return out
}

func marshalResult(t testing.TB, r Result) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestCorpus parses every corpus file and compares the result with its
// golden JSON (regenerate with go test ./toolparse -update, then read the
// diff).
func TestCorpus(t *testing.T) {
	for _, c := range loadCorpus(t) {
		t.Run(c.name, func(t *testing.T) {
			got := marshalResult(t, Parse(c.text, c.opts))
			golden := filepath.Join("testdata", "corpus", c.name+".golden.json")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./toolparse -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("result differs from %s\ngot:\n%s\nwant:\n%s", golden, got, want)
			}
		})
	}
}

// TestCorpusInvariants checks what must hold for every output, whatever
// the golden file says.
func TestCorpusInvariants(t *testing.T) {
	for _, c := range loadCorpus(t) {
		t.Run(c.name, func(t *testing.T) {
			checkInvariants(t, c.text, Parse(c.text, c.opts))
		})
	}
}
