package eval_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/droidgo/droidgo/eval"
	"github.com/droidgo/droidgo/fixtures"
	"github.com/droidgo/droidgo/replay/replaytest"
	"github.com/droidgo/droidgo/simulator"
)

// An evaluation of replays scores "replay success" on the perturbed phones:
// the recorded runs of the scenarios they vary carried out to the end where
// the phone only looks different, stopped where it disagrees. Decision
// cases have nothing to replay.
func TestEvalReplays(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"wifi", "alarm", "search"} {
		data, err := fixtures.FS.ReadFile("recordings/" + name + ".jsonl")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".jsonl"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// message-send's run as `eval --out` keeps it.
	phone, err := simulator.Load("message-send")
	if err != nil {
		t.Fatal(err)
	}
	data, res, _ := replaytest.RunScriptFile(t, phone, "message-send")
	if !res.Success {
		t.Fatal(res.Reason)
	}
	if err := os.MkdirAll(filepath.Join(dir, "runs", "tasks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "runs", "tasks", "message-send-r1.jsonl"), data, 0o644); err != nil {
		t.Fatal(err)
	}

	perturbed, err := eval.Load(eval.BuiltinPerturbed)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := eval.Load(eval.BuiltinTasks)
	if err != nil {
		t.Fatal(err)
	}
	decisions, err := eval.Load(eval.BuiltinDecisions)
	if err != nil {
		t.Fatal(err)
	}
	clk := replaytest.NewClock()
	out := t.TempDir()
	got, err := eval.Run(context.Background(), []*eval.Suite{perturbed, tasks, decisions}, eval.Options{
		Replays: eval.Replays(dir), ModelName: "replay:" + dir, Parallel: 2, Out: out, Now: clk.Now, Sleep: clk.Sleep,
	})
	if err != nil {
		t.Fatal(err)
	}
	ran := map[string]bool{}
	for _, r := range got.Tasks {
		key := r.Suite + "/" + r.Name
		switch {
		case r.Suite == "perturbed" || r.Suite == "tasks" && (r.Name == "wifi" || r.Name == "message-send"):
			if r.NotRun || !r.Success {
				t.Errorf("%s: %+v", key, r)
			}
			ran[key] = true
			if r.Recording == "" {
				t.Errorf("%s: no recording", key)
			} else if _, err := os.Stat(filepath.Join(out, r.Recording)); err != nil {
				t.Errorf("%s: %v", key, err)
			}
		case r.Suite == "tasks" && !r.NotRun && r.Name != "alarm" && r.Name != "search":
			t.Errorf("%s ran without a recording: %+v", key, r)
		case r.Suite == "tasks" && r.NotRun && !strings.Contains(r.Reason, "no recording of "+r.Name):
			t.Errorf("%s: %q", key, r.Reason)
		}
	}
	if len(ran) < 11 {
		t.Errorf("%d replays scored: %v", len(ran), ran)
	}
	for _, r := range got.Decisions {
		if !r.NotRun {
			t.Fatalf("a decision case was run: %+v", r)
		}
	}
	for _, r := range got.Tasks {
		if r.Name == "message-send-gone" && !strings.HasPrefix(r.Reason, "stopped as it must: ") {
			t.Errorf("message-send-gone: %q", r.Reason)
		}
	}
}
