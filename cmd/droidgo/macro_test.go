package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// macroHarness is a harness whose macros live in a fresh XDG_DATA_HOME.
func macroHarness(t *testing.T) (*harness, string) {
	h := newHarness(t)
	h.fakeClock()
	data := t.TempDir()
	h.env["XDG_DATA_HOME"] = data
	return h, filepath.Join(data, "droidgo", "macros")
}

// sendRecording records the message-send run, its Send approved in step
// mode.
func sendRecording(t *testing.T, h *harness) string {
	t.Helper()
	rec := filepath.Join(t.TempDir(), "send.jsonl")
	r := h.runWith(context.Background(), strings.NewReader(strings.Repeat("y\n", 10)), "run", "--sim", "message-send", "--model", scriptFor("eval/message-send", "0"), "--no-tui", "--step", "--record", rec)
	if r.code != 0 {
		t.Fatalf("recording the run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	return rec
}

// TestMacroCommands saves a run as a macro with a parameter, lists, shows,
// runs it with two values (non-ASCII included, typed exactly) and refuses
// to run it without one, then removes it: each with --json.
func TestMacroCommands(t *testing.T) {
	t.Parallel()
	h, dir := macroHarness(t)
	rec := sendRecording(t, h)
	r := h.run(context.Background(), "macro", "save", rec, "send", "--param", "message=On my way", "--json")
	if r.code != 0 {
		t.Fatalf("save: exit %d\n%s", r.code, r.stderr)
	}
	var saved map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &saved); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"name": "send", "file": filepath.Join(dir, "send.toml"), "task": "Send '{{message}}' to Alice Moreau", "params": []any{"message"}, "steps": 5.0}
	if !reflect.DeepEqual(saved, want) {
		t.Errorf("save --json %v, want %v", saved, want)
	}
	if r := h.run(context.Background(), "macro", "save", rec, "send"); r.code != 2 {
		t.Errorf("saving over a macro: exit %d", r.code)
	}

	r = h.run(context.Background(), "macro", "list", "--json")
	var list []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || r.code != 0 || len(list) != 1 || list[0]["name"] != "send" || list[0]["steps"] != 5.0 {
		t.Fatalf("list: exit %d %v %s", r.code, err, r.stdout)
	}
	r = h.run(context.Background(), "macro", "show", "send", "--json")
	var shown map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &shown); err != nil || r.code != 0 {
		t.Fatalf("show: exit %d %v", r.code, err)
	}
	steps, _ := shown["steps"].([]any)
	if len(steps) != 5 || !strings.Contains(steps[2].(map[string]any)["do"].(string), "{{message}}") {
		t.Errorf("show --json steps %v", shown["steps"])
	}
	if r := h.run(context.Background(), "macro", "show", "send"); r.code != 0 || !strings.Contains(r.stdout, `params = ["message"]`) {
		t.Errorf("show: exit %d\n%s", r.code, r.stdout)
	}

	for _, msg := range []string{"Running late", "Grüße aus Köln 👋 — 你好!"} {
		r := h.runWith(context.Background(), strings.NewReader(strings.Repeat("y\n", 10)), "macro", "run", "send", "--sim", "message-send", "--set", "message="+msg, "--step", "--json")
		if r.code != 0 {
			t.Fatalf("run with %q: exit %d\n%s\n%s", msg, r.code, r.stdout, r.stderr)
		}
		lines := jsonLines(t, r.stdout)
		if last := lines[len(lines)-1]; last["type"] != "replay_result" || last["replayed"] != 5.0 || last["total"] != 5.0 {
			t.Errorf("replay_result %v", last)
		}
		phone := h.lastPhone()
		if typed := phone.Typed(); len(typed) != 1 || typed[0] != msg {
			t.Errorf("typed %q, want exactly %q", typed, msg)
		}
		if sent := phone.List("sent"); len(sent) != 1 || sent[0]["text"] != msg {
			t.Errorf("sent %v", sent)
		}
	}

	// A parameter left unset, or one the macro does not have, is refused
	// before any phone is opened.
	for _, args := range [][]string{
		{"macro", "run", "send", "--sim", "message-send"},
		{"macro", "run", "send", "--sim", "message-send", "--set", "message=x", "--set", "other=y"},
		{"macro", "run", "send", "--sim", "message-send", "--set", "message"},
	} {
		h2, _ := macroHarness(t)
		h2.env["XDG_DATA_HOME"] = h.env["XDG_DATA_HOME"]
		r := h2.run(context.Background(), args...)
		if r.code != 2 || h2.lastPhone() != nil {
			t.Errorf("%q: exit %d, a phone opened: %v\n%s", args, r.code, h2.lastPhone() != nil, r.stderr)
		}
	}

	r = h.run(context.Background(), "macro", "rm", "send", "--json")
	var removed map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &removed); err != nil || r.code != 0 || removed["removed"] != true || removed["name"] != "send" {
		t.Fatalf("rm: exit %d %s", r.code, r.stdout)
	}
	if r := h.run(context.Background(), "macro", "rm", "send"); r.code != 2 {
		t.Errorf("removing a removed macro: exit %d", r.code)
	}
	if r := h.run(context.Background(), "macro", "list"); r.code != 0 || !strings.Contains(r.stdout, "no macros") {
		t.Errorf("list of none: exit %d %q", r.code, r.stdout)
	}
}

// A malformed macro file is reported with its line; the commands refuse
// bad names and runs that are no macro.
func TestMacroErrors(t *testing.T) {
	t.Parallel()
	h, dir := macroHarness(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bad := "task = \"x\"\nparams = []\n\n[[step]]\ndo = 'tapp(index=1)'\n"
	if err := os.WriteFile(filepath.Join(dir, "bad.toml"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"macro", "show", "bad"}, {"macro", "run", "bad", "--sim", "wifi"}} {
		r := h.run(context.Background(), args...)
		if r.code != 2 || !strings.Contains(r.stderr, filepath.Join(dir, "bad.toml")+":5:") {
			t.Errorf("%q: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
	r := h.run(context.Background(), "macro", "list", "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"error": "`) {
		t.Errorf("list of a broken macro: exit %d\n%s", r.code, r.stdout)
	}
	for _, args := range [][]string{
		{"macro", "save", "wifi", "../escape"},
		{"macro", "save", "wifi-loop", "loop"}, // a failed run
		{"macro", "save", "wifi", "w", "--param", "x=not in the run"},
		{"macro", "save", "wifi", "w", "--param", "novalue"},
		{"macro", "save", "no-such.jsonl", "w"},
		{"macro", "show", "nope"},
		{"macro", "run", "nope", "--sim", "wifi"},
		{"macro", "frobnicate"},
	} {
		if r := h.run(context.Background(), args...); r.code != 2 {
			t.Errorf("%q: exit %d, want 2\n%s", args, r.code, r.stderr)
		}
	}
	h.env["XDG_DATA_HOME"] = "relative/dir"
	if r := h.run(context.Background(), "macro", "list"); r.code != 2 {
		t.Errorf("a relative XDG_DATA_HOME: exit %d", r.code)
	}
}
