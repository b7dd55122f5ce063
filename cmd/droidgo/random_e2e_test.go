package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/droidgo/droidgo/eval"
	"github.com/droidgo/droidgo/loop"
	"github.com/droidgo/droidgo/model/spark"
	"github.com/droidgo/droidgo/model/tokenizer"
)

// makeRandom writes the first-minutes model: `droidgo model make-random`
// with its defaults.
func makeRandom(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	if r := droidgo(t, context.Background(), "model", "make-random", "--arch-size", "tiny", "--out", path); r.code != 0 {
		t.Fatalf("make-random: exit %d: %s", r.code, r.stderr)
	}
	return path
}

// A random model from make-random carries Spark's special tokens, each one
// token, so the template and the tool-call parser see Spark's structure.
func TestRandomModelHasSparkTokens(t *testing.T) {
	t.Parallel()
	path := makeRandom(t)
	tok, err := tokenizer.LoadGGUF(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range spark.SpecialTokens {
		if ids := tok.Encode(s, true); len(ids) != 1 {
			t.Errorf("%q encodes to %d tokens %v, want one", s, len(ids), ids)
		}
	}
}

// The smoke test of the in-process path: `droidgo run "Turn on Wi-Fi"
// --sim wifi --model tiny.gguf` runs end to end on a random model. Its
// decisions are garbage; that every step prompts, generates and parses
// is the point.
func TestRunRandomModelEndToEnd(t *testing.T) {
	t.Parallel()
	path := makeRandom(t)
	h := newHarness(t)
	r := h.run(context.Background(), "run", "Turn on Wi-Fi", "--sim", "wifi", "--model", path, "--json", "--max-steps", "2", "--think-budget", "8", "--poll", "1ms")
	if r.code != 0 && r.code != 1 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	turns, steps := 0, 0
	var res *loop.Result
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var ev loop.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("bad JSON line %q: %v", line, err)
		}
		switch ev.Type {
		case loop.EvModelStats:
			turns++
			if ev.Stats.PromptTokens < 500 || ev.Stats.GeneratedTokens == 0 {
				t.Errorf("turn %d: %d prompt tokens, %d generated", turns, ev.Stats.PromptTokens, ev.Stats.GeneratedTokens)
			}
		case loop.EvStepStarted:
			steps++
		case loop.EvFinished:
			res = ev.Result
		}
	}
	if turns == 0 || steps == 0 || res == nil {
		t.Fatalf("%d model turns, %d steps, result %v:\n%s", turns, steps, res, r.stdout)
	}
	if strings.Contains(res.Reason, "context") || strings.HasPrefix(res.Reason, "model:") {
		t.Errorf("the run ended on a model error: %s", res.Reason)
	}
}

// The in-process engine runs both suites end to end with a random model:
// results, recordings and the report are written; every run ran.
func TestEvalRandomModelEndToEnd(t *testing.T) {
	t.Parallel()
	path := makeRandom(t)
	out := t.TempDir()
	r := droidgo(t, context.Background(), "eval", "--model", path, "--filter", `^(tasks/wifi|decisions/qs-flashlight)$`,
		"--max-steps", "2", "--think-budget", "8", "--out", out, "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var res eval.Results
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	if res.Summary.Tasks.N != 1 || res.Summary.Tasks.NotRun != 0 || res.Summary.Decisions.N != 1 || res.Summary.Decisions.NotRun != 0 {
		t.Fatalf("summary %+v\ntasks %+v\ndecisions %+v", res.Summary, res.Tasks, res.Decisions)
	}
	if !strings.HasPrefix(res.Model, "spark:") {
		t.Errorf("model %q", res.Model)
	}
	for _, tr := range res.Tasks {
		if tr.PromptTokens == 0 || tr.Steps == 0 {
			t.Errorf("%s: %d prompt tokens in %d steps", tr.Name, tr.PromptTokens, tr.Steps)
		}
		if _, err := os.Stat(filepath.Join(out, tr.Recording)); err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "report.html")); err != nil {
		t.Error(err)
	}
}
