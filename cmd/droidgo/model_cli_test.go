package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runModelCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = execute(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestModelCLI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "tiny.gguf")
	if code, _, errs := runModelCLI(t, "model", "make-random", "--arch-size", "tiny", "--type", "q8_0", "--out", path, "--seed", "3"); code != 0 {
		t.Fatalf("make-random: exit %d: %s", code, errs)
	}
	hf := filepath.Join(dir, "hf")
	if code, _, errs := runModelCLI(t, "model", "make-random", "--arch-size", "gqa", "--format", "hf", "--out", hf); code != 0 {
		t.Fatalf("make-random hf: exit %d: %s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(hf, "model.safetensors")); err != nil {
		t.Fatal(err)
	}

	code, out, errs := runModelCLI(t, "model", "info", path, "--json", "--ctx", "100")
	if code != 0 {
		t.Fatalf("info: exit %d: %s", code, errs)
	}
	var info struct {
		Architecture string              `json:"architecture"`
		Config       struct{ Vocab int } `json:"config"`
		TensorTypes  map[string]int      `json:"tensor_types"`
		KV           int64               `json:"kv_cache_bytes"`
		Mem          int64               `json:"memory_estimate_bytes"`
	}
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatalf("info json: %v\n%s", err, out)
	}
	if info.Architecture != "spark2_5" || info.Config.Vocab != 512 || info.TensorTypes["Q8_0"] != 8*6+1 || info.TensorTypes["F32"] != 17 || info.KV <= 0 || info.Mem <= info.KV {
		t.Errorf("info = %+v", info)
	}
	if code, out, _ := runModelCLI(t, "model", "info", hf); code != 0 || !strings.Contains(out, "(hf)") {
		t.Errorf("info hf: exit %d: %s", code, out)
	}

	code, out, errs = runModelCLI(t, "model", "logits", path, "--tokens", "0,5,7", "--json", "--threads", "1")
	if code != 0 {
		t.Fatalf("logits: exit %d: %s", code, errs)
	}
	var last struct {
		NVocab  int       `json:"n_vocab"`
		NTokens int       `json:"n_tokens"`
		Logits  []float32 `json:"logits"`
	}
	if err := json.Unmarshal([]byte(out), &last); err != nil || last.NVocab != 512 || last.NTokens != 3 || len(last.Logits) != 512 {
		t.Fatalf("logits json: %v %d %d %d", err, last.NVocab, last.NTokens, len(last.Logits))
	}
	code, out, _ = runModelCLI(t, "model", "logits", path, "--tokens", "0,5,7", "--json", "--all-positions")
	var all struct {
		Logits [][]float32 `json:"logits"`
	}
	if err := json.Unmarshal([]byte(out), &all); code != 0 || err != nil || len(all.Logits) != 3 || len(all.Logits[2]) != 512 {
		t.Fatalf("all-positions: exit %d %v", code, err)
	}
	for i, v := range last.Logits {
		if v != all.Logits[2][i] {
			t.Fatalf("last-position logits differ between modes at %d: %g vs %g", i, v, all.Logits[2][i])
		}
	}

	code, out, errs = runModelCLI(t, "model", "generate", path, "--tokens", "0,5,7", "-n", "4", "--greedy", "--json")
	var gen struct {
		Tokens []int `json:"tokens"`
	}
	if err := json.Unmarshal([]byte(out), &gen); code != 0 || err != nil || len(gen.Tokens) != 4 {
		t.Fatalf("generate: exit %d %v %s %s", code, err, out, errs)
	}
	best := 0
	for i, v := range last.Logits {
		if v > last.Logits[best] {
			best = i
		}
	}
	if gen.Tokens[0] != best {
		t.Errorf("first generated token %d, argmax of logits %d", gen.Tokens[0], best)
	}
}

func TestModelCLIErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "tiny.gguf")
	runModelCLI(t, "model", "make-random", "--arch-size", "tiny", "--out", path)
	bad := filepath.Join(dir, "bad.gguf")
	os.WriteFile(bad, []byte("GGUF\x07\x00\x00\x00garbage-garbage-garbage"), 0o644)
	cases := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"model", "logits", path}, 2, "--tokens is required"},
		{[]string{"model", "logits", path, "--tokens", "1,a"}, 2, "not a token id"},
		{[]string{"model", "logits", path, "--tokens", "1", "--gelu", "x"}, 2, "--gelu"},
		{[]string{"model", "logits", path, "--tokens", "1,9999"}, 1, "out of range"},
		{[]string{"model", "logits", bad, "--tokens", "1"}, 1, "unsupported GGUF version 7"},
		{[]string{"model", "info", filepath.Join(dir, "missing")}, 1, "no such file"},
		{[]string{"model", "info"}, 2, ""},
		{[]string{"model", "make-random", "--arch-size", "huge", "--out", bad}, 2, "unknown --arch-size"},
		{[]string{"model", "make-random", "--type", "q3_k", "--out", bad}, 2, "unknown model type"},
		{[]string{"model", "make-random"}, 2, "--out is required"},
		{[]string{"model", "generate", path, "--tokens", "1", "-n", "-1"}, 2, "-n"},
	}
	for _, c := range cases {
		code, _, errs := runModelCLI(t, c.args...)
		if code != c.code || !strings.Contains(errs, c.msg) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d mentioning %q", c.args, code, errs, c.code, c.msg)
		}
		if strings.Count(strings.TrimSpace(errs), "\n") > 0 && c.code == 1 {
			t.Errorf("%v: error is more than one line: %q", c.args, errs)
		}
	}
}
