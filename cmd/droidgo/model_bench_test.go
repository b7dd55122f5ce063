package main

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
)

func TestModelBench(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	if code, _, errs := runModelCLI(t, "model", "make-random", "--arch-size", "tiny", "--type", "q8_0", "--out", path); code != 0 {
		t.Fatalf("make-random: exit %d: %s", code, errs)
	}
	for _, preload := range []string{"--preload=false", "--preload=true"} {
		code, out, errs := runModelCLI(t, "model", "bench", path, "-p", "12", "-n", "5", "-t", "2", "-r", "2", "--json", preload)
		if code != 0 {
			t.Fatalf("bench %s: exit %d: %s", preload, code, errs)
		}
		var raw map[string]any
		if err := json.Unmarshal([]byte(out), &raw); err != nil {
			t.Fatalf("bench json: %v\n%s", err, out)
		}
		var keys []string
		for k := range raw {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		want := []string{"load_s", "n_gen", "n_prompt", "pp_sd", "pp_tps", "rss_mb", "tg_sd", "tg_tps", "threads"}
		if !reflect.DeepEqual(keys, want) {
			t.Errorf("keys %v, want %v", keys, want)
		}
		var r benchResult
		json.Unmarshal([]byte(out), &r)
		if r.NPrompt != 12 || r.NGen != 5 || r.Threads != 2 || r.PPTPS <= 0 || r.TGTPS <= 0 || r.PPSD < 0 || r.LoadS <= 0 || r.RSSMB <= 0 {
			t.Errorf("result %+v", r)
		}
	}
	// Only one test: the other's figures are zero.
	code, out, errs := runModelCLI(t, "model", "bench", path, "-p", "0", "-n", "3", "-r", "1", "--json")
	if code != 0 {
		t.Fatalf("bench -p 0: exit %d: %s", code, errs)
	}
	var r benchResult
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.PPTPS != 0 || r.TGTPS <= 0 {
		t.Errorf("-p 0: %+v (%v)", r, err)
	}
	for _, args := range [][]string{
		{"-p", "0", "-n", "0"}, {"-r", "0"}, {"-n", "-1"}, {"--gelu", "relu"},
	} {
		code, _, errs := runModelCLI(t, append([]string{"model", "bench", path}, args...)...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errs)
		}
	}
	if code, _, _ := runModelCLI(t, "model", "bench", filepath.Join(t.TempDir(), "missing.gguf")); code != 1 {
		t.Errorf("missing file: exit %d, want 1", code)
	}
}
