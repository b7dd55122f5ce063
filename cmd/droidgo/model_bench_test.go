package main

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/droidgo/droidgo/model/kernels"
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
		want := []string{"cores", "cpus", "kernels", "load_s", "n_gen", "n_prompt", "pp_sd", "pp_tps", "rss_mb", "tg_sd", "tg_tps", "threads"}
		if !reflect.DeepEqual(keys, want) {
			t.Errorf("keys %v, want %v", keys, want)
		}
		var r benchResult
		json.Unmarshal([]byte(out), &r)
		if r.NPrompt != 12 || r.NGen != 5 || r.Threads != 2 || r.PPTPS <= 0 || r.TGTPS <= 0 || r.PPSD < 0 || r.LoadS <= 0 || r.RSSMB <= 0 || r.Kernels != kernels.ISA() || r.Cores == "" {
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
	// After a context of -d tokens: the same object with n_depth.
	code, out, errs = runModelCLI(t, "model", "bench", path, "-p", "4", "-n", "3", "-d", "7", "-r", "2", "--json")
	if code != 0 {
		t.Fatalf("bench -d: exit %d: %s", code, errs)
	}
	var rd benchResult
	if err := json.Unmarshal([]byte(out), &rd); err != nil || rd.NDepth != 7 || rd.NPrompt != 4 || rd.NGen != 3 || rd.PPTPS <= 0 || rd.TGTPS <= 0 {
		t.Errorf("-d 7: %+v (%v)", rd, err)
	}
	if code, out, errs := runModelCLI(t, "model", "bench", path, "-p", "4", "-n", "3", "-d", "7", "-r", "1"); code != 0 || !strings.Contains(out, "| pp4 @ d7 |") || !strings.Contains(out, "| tg3 @ d7 |") || !strings.Contains(errs, "context of 7 tokens prefilled") {
		t.Errorf("bench -d text: exit %d: %s%s", code, out, errs)
	}
	for _, args := range [][]string{
		{"-p", "0", "-n", "0"}, {"-r", "0"}, {"-n", "-1"}, {"--gelu", "relu"}, {"-d", "-1"}, {"-d", "4", "--parallel", "2"},
	} {
		code, _, errs := runModelCLI(t, append([]string{"model", "bench", path}, args...)...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errs)
		}
	}
	// More positions than the model's context (make-random writes 32768).
	for _, args := range [][]string{{"-p", "4", "-n", "3", "-d", "32765"}, {"-p", "40000", "-n", "0"}, {"--parallel", "2", "-p", "30000", "-n", "3000"},
		{"-d", "9223372036854775807"}, {"-p", "9223372036854775807", "-n", "9223372036854775807"}} {
		code, _, errs := runModelCLI(t, append([]string{"model", "bench", path}, args...)...)
		if code != 2 || !strings.Contains(errs, "the model's context of 32768") {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errs)
		}
	}
	if code, _, _ := runModelCLI(t, "model", "bench", filepath.Join(t.TempDir(), "missing.gguf")); code != 1 {
		t.Errorf("missing file: exit %d, want 1", code)
	}
}

// model bench --parallel: exactly the JSON fields, a row per count,
// and usage errors for bad counts.
func TestModelBenchParallel(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	if code, _, errs := runModelCLI(t, "model", "make-random", "--arch-size", "tiny", "--type", "q4_k_m", "--out", path); code != 0 {
		t.Fatalf("make-random: exit %d: %s", code, errs)
	}
	code, out, errs := runModelCLI(t, "model", "bench", path, "--parallel", "1,3", "-p", "9", "-n", "4", "-r", "1", "-t", "2", "--json")
	if code != 0 {
		t.Fatalf("bench --parallel: exit %d: %s", code, errs)
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatalf("json: %v\n%s", err, out)
	}
	var keys []string
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if want := []string{"model", "parallel", "threads"}; !reflect.DeepEqual(keys, want) {
		t.Errorf("keys %v, want %v", keys, want)
	}
	rows, _ := raw["parallel"].([]any)
	if len(rows) != 2 {
		t.Fatalf("parallel: %v", raw["parallel"])
	}
	for i, r := range rows {
		row := r.(map[string]any)
		var keys []string
		for k := range row {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if want := []string{"pp_tps", "rss_mb", "sequences", "tg_tps", "tg_tps_per_sequence"}; !reflect.DeepEqual(keys, want) {
			t.Errorf("row keys %v, want %v", keys, want)
		}
		n := []float64{1, 3}[i]
		if row["sequences"] != n || row["pp_tps"].(float64) <= 0 || row["tg_tps"].(float64) <= 0 || row["rss_mb"].(float64) <= 0 {
			t.Errorf("row %d: %v", i, row)
		}
		if d := row["tg_tps"].(float64)/n - row["tg_tps_per_sequence"].(float64); d > 1e-9 || d < -1e-9 {
			t.Errorf("row %d: tg_tps %v is not %v times tg_tps_per_sequence %v", i, row["tg_tps"], n, row["tg_tps_per_sequence"])
		}
	}
	if raw["model"] != path || raw["threads"] != 2.0 {
		t.Errorf("model %v threads %v", raw["model"], raw["threads"])
	}
	for _, args := range [][]string{{"--parallel", "0"}, {"--parallel", "1,x"}, {"--parallel", "2", "-n", "0"}, {"--parallel", "1,,2"}} {
		if code, _, errs := runModelCLI(t, append([]string{"model", "bench", path}, args...)...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errs)
		}
	}
}
