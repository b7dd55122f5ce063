package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

const tokTestdata = "../../model/tokenizer/testdata/"

func runDroidgo(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = execute(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestModelTokenizeJSON(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(tokTestdata + "ref-rich-vocab.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Cases []struct {
			Text string `json:"text"`
			IDs  []int  `json:"ids"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatal(err)
	}
	for _, c := range ref.Cases[:20] {
		code, out, errs := runDroidgo(t, "", "model", "tokenize", tokTestdata+"rich-vocab.gguf", "--text", c.Text, "--json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var got struct {
			Tokens []int `json:"tokens"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil || got.Tokens == nil {
			t.Fatalf("output %q: %v", out, err)
		}
		if !slices.Equal(got.Tokens, c.IDs) && len(c.IDs) > 0 {
			t.Errorf("%q: got %v, want llama.cpp's %v", c.Text, got.Tokens, c.IDs)
		}
	}
}

func TestModelTokenizeText(t *testing.T) {
	t.Parallel()
	code, out, _ := runDroidgo(t, "", "model", "tokenize", tokTestdata+"rich-vocab.gguf", "--text", "<think>a\n")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 || lines[0] != "3\t\"<think>\"" || !strings.HasSuffix(lines[2], "\t\"\\n\"") {
		t.Errorf("output %q", out)
	}
	code, out, _ = runDroidgo(t, "", "model", "tokenize", tokTestdata+"rich-vocab.gguf", "--text", "", "--json")
	if code != 0 || out != "{\"tokens\":[]}\n" {
		t.Errorf("empty text: exit %d, output %q", code, out)
	}
}

func TestModelTokenizeErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"model", "tokenize", tokTestdata + "rich-vocab.gguf"}, 2},
		{[]string{"model", "tokenize", "--text", "x"}, 2},
		{[]string{"model", "tokenize", tokTestdata + "nonexistent.gguf", "--text", "x"}, 1},
		{[]string{"model", "tokenize", tokTestdata + "corpus.json", "--text", "x"}, 1},
		{[]string{"model", "tokenize", tokTestdata, "--text", "x"}, 1}, // a directory without tokenizer.json
	} {
		code, out, errs := runDroidgo(t, "", tc.args...)
		if code != tc.code || out != "" || strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "droidgo: ") {
			t.Errorf("%v: exit %d (want %d), stdout %q, stderr %q", tc.args, code, tc.code, out, errs)
		}
	}
}
