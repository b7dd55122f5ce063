package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/droidgo/droidgo/loop"
	"github.com/droidgo/droidgo/recording"
)

// jsonLines reads --json output: one object per line.
func jsonLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a JSON line: %q (%v)", l, err)
		}
		lines = append(lines, m)
	}
	return lines
}

// TestReplayOnPhoneContract checks `replay FILE --sim` against the
// contract: events one per line as run --json prints them, the last line
// the replay_result with exactly its fields, and the exit codes.
func TestReplayOnPhoneContract(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, file, sim string
		code            int
		result          map[string]any // the replay_result without why
	}{
		{"as recorded", "wifi", "wifi", 0, map[string]any{"type": "replay_result", "replayed": 5.0, "total": 5.0}},
		{"a row inserted", "wifi", "wifi-inserted", 0, map[string]any{"type": "replay_result", "replayed": 5.0, "total": 5.0}},
		{"a dialog", "wifi", "wifi-dialog", 1, map[string]any{"type": "replay_result", "replayed": 1.0, "total": 5.0, "stopped_at": 2.0}},
		{"a failed run replayed as it ended", "wifi-loop", "wifi", 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			h.fakeClock()
			r := h.run(context.Background(), "replay", tc.file, "--sim", tc.sim, "--json")
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", r.code, tc.code, r.stdout, r.stderr)
			}
			lines := jsonLines(t, r.stdout)
			last := lines[len(lines)-1]
			if last["type"] != "replay_result" {
				t.Fatalf("last line %v", last)
			}
			if tc.code != 0 {
				if why, _ := last["why"].(string); why == "" {
					t.Errorf("a stopped replay without why: %v", last)
				}
				delete(last, "why")
			} else if _, ok := last["stopped_at"]; ok {
				t.Errorf("stopped_at in a replay that did not stop: %v", last)
			}
			if tc.result != nil && !reflect.DeepEqual(last, tc.result) {
				t.Errorf("replay_result %v, want %v", last, tc.result)
			}
			if lines[0]["type"] != "run_started" || lines[len(lines)-2]["type"] != "finished" {
				t.Errorf("first %v, before last %v", lines[0]["type"], lines[len(lines)-2]["type"])
			}
			for _, l := range lines[:len(lines)-1] {
				if l["device"] != "sim:"+tc.sim {
					t.Errorf("an event without the device: %v", l)
				}
				if l["type"] == "action" && l["outcome"] == "done" && l["call"].(map[string]any)["name"] != "task_complete" {
					rp, _ := l["replay"].(map[string]any)
					for _, k := range []string{"read_ms", "match_ms", "act_ms", "step", "similarity"} {
						if _, ok := rp[k]; !ok {
							t.Errorf("action without replay.%s: %v", k, l)
						}
					}
				}
			}
		})
	}
}

// A stop leaves a report a person can act on, and --record keeps the
// partial run, which replays in turn.
func TestReplayStopReport(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.fakeClock()
	dir := t.TempDir()
	rec := filepath.Join(dir, "send.jsonl")
	// The Send waits for approval: step mode approves it with "y" on
	// stdin.
	r := h.runWith(context.Background(), strings.NewReader(strings.Repeat("y\n", 10)), "run", "--sim", "message-send", "--model", scriptFor("eval/message-send", "0"), "--no-tui", "--step", "--record", rec)
	if r.code != 0 {
		t.Fatalf("recording the run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	partial := filepath.Join(dir, "partial.jsonl")
	r = h.run(context.Background(), "replay", rec, "--sim", "message-send-gone", "--no-tui", "--record", partial)
	if r.code != 1 {
		t.Fatalf("exit %d\n%s", r.code, r.stdout)
	}
	for _, want := range []string{
		"replay stopped at step 2 (recorded step 2, tap(index=",
		`recorded element: "Alice Moreau, Are you coming tonight?"`,
		"best on the live screen:\n    1. [",
		`differs in name "Alice Moreau" -> "Bob Chen"`,
		"replayed 1 of 5 steps; stopped at step 2: the recorded element",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the report lacks %q:\n%s", want, r.stdout)
		}
	}
	got, err := recording.Open(partial)
	if err != nil {
		t.Fatal(err)
	}
	var stop *loop.ReplayStop
	for _, ev := range got.Events {
		if ev.Replay != nil && ev.Replay.Stop != nil {
			stop = ev.Replay.Stop
		}
	}
	if stop == nil || stop.Kind != loop.StopTarget || len(stop.Candidates) != 3 || stop.Recorded == nil || got.Result() == nil || got.Result().Success {
		t.Fatalf("the partial recording: stop %+v, result %+v", stop, got.Result())
	}
	// The partial run is a recording like any other: drawn, and replayed.
	if r := h.run(context.Background(), "replay", partial, "--no-tui", "--speed", "0"); r.code != 1 {
		t.Errorf("drawing the partial run: exit %d", r.code)
	}
}

func TestReplayUsage(t *testing.T) {
	t.Parallel()
	empty := filepath.Join(t.TempDir(), "empty.jsonl")
	if err := os.WriteFile(empty, []byte(`{"type":"recording","version":2}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"replay", "wifi", "--model", "script:x.txt"},
		{"replay", "wifi", "--step"},
		{"replay", "wifi", "--record", "x.jsonl"},
		{"replay", "wifi", "--sim", "wifi", "--speed", "2"},
		{"replay", "wifi", "--sim", "wifi", "--device", "emulator-5554"},
		{"replay", "wifi", "--sim", "nope"},
		{"replay", "wifi", "--sim", "wifi", "--min-score", "0"},
		{"replay", "wifi", "--sim", "wifi", "--min-similarity", "1.5"},
		{"replay", "no-such-file.jsonl", "--sim", "wifi"},
		{"replay", empty, "--sim", "wifi"},
		{"replay", "wifi", "--sim", "wifi", "--model", "script:" + filepath.Join(t.TempDir(), "missing.txt")},
	} {
		r := droidgo(t, context.Background(), args...)
		if r.code != 2 {
			t.Errorf("%q: exit %d, want 2\n%s", args, r.code, r.stderr)
		}
		if r.code == 2 && (!strings.HasPrefix(r.stderr, "droidgo: ") || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0) {
			t.Errorf("%q: stderr %q is not one sentence", args, r.stderr)
		}
	}
}

// `droidgo eval --replay DIR` scores replay success on the perturbed
// phones from an `eval --out DIR` run of the task suite.
func TestEvalReplayCommand(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.fakeClock()
	out := t.TempDir()
	r := h.run(context.Background(), "eval", "--suite", "tasks", "--filter", "^tasks/(wifi|alarm|search|message-send)$", "--model", "script:"+filepath.Join(fixturesDir, "scripts", "eval"), "--out", out)
	if r.code != 0 {
		t.Fatalf("eval: exit %d\n%s", r.code, r.stderr)
	}
	r = h.run(context.Background(), "eval", "--replay", out, "--json")
	if r.code != 0 {
		t.Fatalf("eval --replay: exit %d\n%s", r.code, r.stderr)
	}
	var res struct {
		Model  string
		Config struct{ Replay string }
		Tasks  []struct {
			Suite, Name, Reason string
			Success, NotRun     bool
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	if res.Model != "replay:"+out || res.Config.Replay != out || len(res.Tasks) < 9 {
		t.Fatalf("results: %+v", res)
	}
	for _, task := range res.Tasks {
		if task.Suite != "perturbed" || !task.Success || task.NotRun {
			t.Errorf("%+v", task)
		}
	}
	for _, args := range [][]string{
		{"eval", "--replay", out, "--model", "script:x"},
		{"eval", "--replay", out, "--suite", "decisions"},
		{"eval", "--replay", filepath.Join(out, "missing")},
	} {
		if r := h.run(context.Background(), args...); r.code != 2 {
			t.Errorf("%q: exit %d, want 2", args, r.code)
		}
	}
}

// The model that takes over may be a server: --endpoint, through a real
// HTTP server on 127.0.0.1 whose model dismisses the dialog, after which
// the replay resumes and ends as recorded.
func TestReplayTakeoverWithEndpoint(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.fakeClock()
	srv, reqs := scriptServer(t, filepath.Join(fixturesDir, "scripts", "replay-dialog.txt"), true)
	r := h.run(context.Background(), "replay", "wifi", "--sim", "wifi-dialog", "--endpoint", srv.URL, "--model-name", "spark", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, tail(r.stdout, 3000), r.stderr)
	}
	if !h.lastPhone().Success() {
		t.Error("Wi-Fi is not on")
	}
	if len(*reqs) != 1 {
		t.Fatalf("%d requests to the server, want 1 (the dialog)", len(*reqs))
	}
	msgs, _ := (*reqs)[0]["messages"].([]any)
	last, _ := msgs[len(msgs)-1].(map[string]any)
	if content, _ := last["content"].(string); !strings.Contains(content, `open_app(name="Settings") -> done by the replay of a recorded run`) {
		t.Errorf("the model was not told what the replay did:\n%s", content)
	}
}
