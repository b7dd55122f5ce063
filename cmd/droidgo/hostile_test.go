package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/droidgo/droidgo/eval"
	"github.com/droidgo/droidgo/model"
	"github.com/droidgo/droidgo/model/kvcache"
	"github.com/droidgo/droidgo/model/weightcache"
)

// hostileText is model output that would set the clipboard, retitle and
// clear the terminal, and reorder text, if it reached a terminal as is.
const hostileText = "I will \x1b]52;c;cm0gLXJmIH4=\x07tap\x1b]0;owned\x07 the \x1b[2Jswitch\u009b31m \u202eevil\u202c now."

// assertNoControls fails when out holds a byte a terminal acts on.
func assertNoControls(t *testing.T, what, out string) {
	t.Helper()
	for _, r := range out {
		if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r < 0xa0 || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 {
			t.Fatalf("%s: control %U reaches the terminal:\n%q", what, r, out)
		}
	}
}

// TestPlainOutputHasNoEscapes runs a script model whose thinking and
// answer hold escape sequences, with the plain printer, then replays its
// recording with --no-tui: neither output may carry them, and the words
// around them stay.
func TestPlainOutputHasNoEscapes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "evil.txt")
	body := "--- turn 1\n" + hostileText + "</think>\n<tool_call>open_app<arg_key>name</arg_key><arg_value>Settings\x1b[H</arg_value></tool_call>\n" +
		"--- turn 2\ndone\x1b]0;t\x07</think>\n<tool_call>task_complete<arg_key>summary</arg_key><arg_value>ok\x1b[2J</arg_value></tool_call>\n"
	if err := os.WriteFile(script, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(dir, "evil.jsonl")
	r := droidgo(t, context.Background(), "run", "Turn on Wi-Fi", "--sim", "wifi", "--model", "script:"+script+"?pace=0", "--no-tui", "--record", rec)
	assertNoControls(t, "run --no-tui", r.stdout)
	assertNoControls(t, "run stderr", r.stderr)
	if !strings.Contains(r.stdout, "I will tap the switch") {
		t.Errorf("the thinking lost its words:\n%s", r.stdout)
	}
	raw, err := os.ReadFile(rec)
	if err != nil || !bytes.Contains(raw, []byte(`\u001b]52`)) {
		t.Fatalf("the recording must keep the model's bytes (JSON-escaped): %v", err)
	}
	r = droidgo(t, context.Background(), "replay", rec, "--no-tui", "--speed", "0")
	assertNoControls(t, "replay --no-tui", r.stdout)
	if !strings.Contains(r.stdout, "I will tap the switch") {
		t.Errorf("the replayed thinking lost its words:\n%s", r.stdout)
	}
	// JSON output keeps the text, escaped by encoding/json.
	r = droidgo(t, context.Background(), "replay", rec, "--json", "--speed", "0")
	if !strings.Contains(r.stdout, `\u001b]52`) || !strings.Contains(r.stdout, `\u202eevil\u202c`) || !strings.Contains(r.stdout, `\u009b31m`) {
		t.Errorf("--json must keep the model's text, escaped")
	}
	assertNoControls(t, "replay --json", r.stdout)
}

// TestParseAndErrorsHaveNoEscapes checks parse's text output and the error
// line on stderr.
func TestParseAndErrorsHaveNoEscapes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var out, errb bytes.Buffer
	in := hostileText + "</think><tool_call>type_text<arg_key>text</arg_key><arg_value>a\x1b]0;x\x07b</arg_value></tool_call>"
	executeWith(h.deps(context.Background(), strings.NewReader(in), &out, &errb), []string{"parse"})
	assertNoControls(t, "parse", out.String())
	out.Reset()
	executeWith(h.deps(context.Background(), strings.NewReader(in), &out, &errb), []string{"parse", "--json"})
	assertNoControls(t, "parse --json", out.String())
	var res struct{ Reasoning string }
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || !strings.Contains(res.Reasoning, "\u202eevil") {
		t.Errorf("parse --json lost the reasoning's text (%v): %s", err, out.String())
	}
	out.Reset()
	errb.Reset()
	executeWith(h.deps(context.Background(), strings.NewReader(""), &out, &errb), []string{"replay", "no\x1b]0;such\x07"})
	if errb.Len() == 0 {
		t.Fatal("no error for a missing recording")
	}
	assertNoControls(t, "stderr", errb.String())
}

// fullWriter fails every write, as stdout redirected to /dev/full does.
type fullWriter struct{}

func (fullWriter) Write(p []byte) (int, error) {
	return 0, &os.PathError{Op: "write", Path: "/dev/stdout", Err: errNoSpace}
}

var errNoSpace = syscall.ENOSPC

// TestFailedStdoutWriteFails runs commands whose output cannot be written:
// each must exit 1 with one message, whatever it would have returned.
func TestFailedStdoutWriteFails(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for _, args := range [][]string{
		{"run", "--sim", "wifi", "--model", scriptFor("wifi", "0"), "--json"},
		{"run", "--sim", "wifi", "--model", scriptFor("wifi", "0"), "--no-tui"},
		{"replay", "wifi", "--json", "--speed", "0"},
		{"replay", "wifi", "--no-tui", "--speed", "0"},
		{"screen", "--sim", "wifi"},
		{"sim", "list"},
	} {
		var errb bytes.Buffer
		code := executeWith(h.deps(context.Background(), strings.NewReader(""), fullWriter{}, &errb), args)
		if code != 1 || !strings.Contains(errb.String(), "cannot write to standard output") || strings.Count(errb.String(), "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q", args, code, errb.String())
		}
	}
	// A recording that cannot be written fails the run (exit 1); one
	// whose path cannot be created is a usage error (exit 2).
	if _, err := os.Stat("/dev/full"); err == nil {
		r := h.run(context.Background(), "run", "--sim", "wifi", "--model", scriptFor("wifi", "0"), "--no-tui", "--record", "/dev/full")
		if r.code != 1 || !strings.Contains(r.stderr, "write recording") {
			t.Errorf("--record /dev/full: exit %d, %q", r.code, r.stderr)
		}
	}
	if r := h.run(context.Background(), "run", "--sim", "wifi", "--model", scriptFor("wifi", "0"), "--no-tui", "--record", filepath.Join(t.TempDir(), "no", "dir.jsonl")); r.code != 2 {
		t.Errorf("--record in a missing directory: exit %d, %q", r.code, r.stderr)
	}
	// The real thing, where the system has it.
	if f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0); err == nil {
		defer f.Close()
		var errb bytes.Buffer
		if code := executeWith(h.deps(context.Background(), strings.NewReader(""), f, &errb), []string{"replay", "wifi", "--json", "--speed", "0"}); code != 1 {
			t.Errorf("replay --json > /dev/full: exit %d, %s", code, errb.String())
		}
	}
}

// chunkStream streams fixed deltas, split so that escape sequences and
// UTF-8 characters straddle them.
type chunkStream struct{ deltas []model.Delta }

func (s *chunkStream) Next() (model.Delta, error) {
	if len(s.deltas) == 0 {
		return model.Delta{}, io.EOF
	}
	d := s.deltas[0]
	s.deltas = s.deltas[1:]
	return d, nil
}
func (s *chunkStream) CloseReasoning() error { return model.ErrUnsupported }
func (s *chunkStream) Close() error          { return nil }
func (s *chunkStream) Stats() model.Stats    { return model.Stats{} }

type chunkBackend struct{ deltas []model.Delta }

func (b chunkBackend) Name() string { return "chunks" }
func (b chunkBackend) Chat(ctx context.Context, req model.ChatRequest) (model.Stream, error) {
	return &chunkStream{append([]model.Delta(nil), b.deltas...)}, nil
}

// TestChatReplyHasNoEscapes streams a reply whose escapes are split across
// deltas through model chat's printer.
func TestChatReplyHasNoEscapes(t *testing.T) {
	t.Parallel()
	var deltas []model.Delta
	for i := 0; i < len(hostileText); i += 3 {
		deltas = append(deltas, model.Delta{Reasoning: hostileText[i:min(i+3, len(hostileText))]})
	}
	deltas = append(deltas, model.Delta{ReasoningClosed: true}, model.Delta{Content: "answer \x1b]0;"}, model.Delta{Content: "x\x07 café"})
	var out bytes.Buffer
	d := &deps{ctx: context.Background(), stdout: &out, stderr: io.Discard}
	answer, _, err := streamReply(d, chunkBackend{deltas}, model.ChatRequest{}, false)
	if err != nil {
		t.Fatal(err)
	}
	assertNoControls(t, "model chat", out.String())
	if !strings.Contains(out.String(), "I will tap the switch") || !strings.Contains(out.String(), "answer  café") {
		t.Errorf("the reply lost its words: %q", out.String())
	}
	if !strings.Contains(answer, "\x1b]0;") {
		t.Errorf("the conversation keeps the model's own answer, got %q", answer)
	}
}

// TestScreenDeepDump reads a dump of 20,000 nested nodes: the result is
// cut at the depth limit with one clear error, and the --all listing is
// linear in the dump, not quadratic in its depth.
func TestScreenDeepDump(t *testing.T) {
	t.Parallel()
	const n = 20000
	var b strings.Builder
	b.WriteString(`<hierarchy rotation="0">`)
	for i := range n {
		b.WriteString(`<node text="t` + strings.Repeat("x", i%3) + `" class="android.widget.FrameLayout" clickable="true" bounds="[0,0][100,100]">`)
	}
	b.WriteString(strings.Repeat("</node>", n) + "</hierarchy>")
	dump := filepath.Join(t.TempDir(), "deep.xml")
	if err := os.WriteFile(dump, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--all"}, {"--all", "--json"}, {}} {
		r := droidgo(t, context.Background(), append([]string{"screen", "--file", dump}, args...)...)
		if r.code != 1 || !strings.Contains(r.stderr, "deeper than 512 levels") {
			t.Errorf("%v: exit %d, stderr %q", args, r.code, r.stderr)
		}
		if len(r.stdout) == 0 || len(r.stdout) > b.Len() {
			t.Errorf("%v: %d bytes of output for a %d-byte dump", args, len(r.stdout), b.Len())
		}
	}
}

// TestTablesAreTerminalSafe: text read from files (results.json, the
// prompt cache) and a model's words in eval's progress line reach the
// terminal through termsafe, bidi overrides and escapes removed, on one
// line.
func TestTablesAreTerminalSafe(t *testing.T) {
	t.Parallel()
	evil := "x\u202eevil\u202c\x1b[2J\u009b1m\nnext"
	h := newHarness(t)
	dir := t.TempDir()
	res := eval.Results{Model: evil, Config: eval.Config{Suites: []string{evil}},
		Tasks: []eval.TaskResult{{Suite: "tasks", Name: evil, Repeat: 1, Reason: evil}}}
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	for _, p := range []string{a, b} {
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := res.WriteJSON(f); err != nil {
			t.Fatal(err)
		}
		f.Close()
		res.Tasks[0].Success = true
	}
	r := h.run(context.Background(), "eval", "compare", a, b)
	if r.code != 0 || !strings.Contains(r.stdout, "evil") {
		t.Fatalf("compare: exit %d, %s %s", r.code, r.stdout, r.stderr)
	}
	assertNoControls(t, "eval compare", r.stdout)

	kc := &kvcache.Cache{Dir: kvcache.Dir(h.getenv)}
	if err := kc.Store(strings.Repeat("ab", 32), kvcache.Meta{Model: evil, KV: evil, Tokens: 3}, []byte("payload")); err != nil {
		t.Fatal(err)
	}
	// The weights cache's entries name their model file in their header.
	lines := 4
	if weightcache.Supported {
		wc := &weightcache.Cache{Dir: weightcache.Dir(h.getenv)}
		e, err := wc.Create(strings.Repeat("cd", 32), evil, 64)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Commit(); err != nil {
			t.Fatal(err)
		}
		e.Close()
		lines = 6
	}
	r = h.run(context.Background(), "cache", "ls")
	if r.code != 0 || !strings.Contains(r.stdout, "evil") {
		t.Fatalf("cache ls: exit %d, %s %s", r.code, r.stdout, r.stderr)
	}
	assertNoControls(t, "cache ls", r.stdout)
	if n := strings.Count(r.stdout, "\n"); n != lines {
		t.Errorf("cache ls: a cell broke the table into %d lines, want %d:\n%s", n, lines, r.stdout)
	}

	var buf bytes.Buffer
	newEvalProgress(&buf, false)(eval.Progress{Done: 1, Total: 2, Last: "tasks/x: failure: " + evil})
	assertNoControls(t, "eval progress", buf.String())
	if strings.Count(buf.String(), "\n") != 1 {
		t.Errorf("eval progress: %q is not one line", buf.String())
	}
}
