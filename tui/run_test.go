package tui

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/loop"
	"github.com/droidgo/droidgo/tui/internal/demo"
)

// syncBuffer is a writer the UI's goroutine and the test can share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// hangGuard bounds a test that would otherwise hang forever on a bug; it is
// not a speed check.
const hangGuard = 30 * time.Second

// runUI starts u.Run without a terminal and returns its result channel.
func runUI(t *testing.T, u *UI) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- u.Run(context.Background()) }()
	return done
}

func waitErr(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(hangGuard):
		t.Fatal("Run did not return")
		return nil
	}
}

// expectedText is what the canned run streams per step, per token type.
func expectedText(evs []loop.Event) map[int][2]string {
	want := map[int][2]string{}
	for _, ev := range evs {
		w := want[ev.Step]
		switch ev.Type {
		case loop.EvThinking:
			w[0] += ev.Text
		case loop.EvAnswer:
			w[1] += ev.Text
		}
		want[ev.Step] = w
	}
	return want
}

func TestRunWithoutTerminal(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	out := &syncBuffer{}
	u := New(Options{In: pr, Out: out, Width: 100, Height: 30, ExitOnFinish: true, Replay: true,
		Env: []string{"TERM=xterm-256color"}})
	done := runUI(t, u)
	evs := demo.Events()
	for _, ev := range evs {
		u.Send(ev)
	}
	u.Close()
	if err := waitErr(t, done); err != nil {
		t.Fatalf("Run: %v", err)
	}
	m := u.final
	if m == nil || m.result == nil || !m.result.Success {
		t.Fatalf("final state has no successful result: %+v", m)
	}
	want := expectedText(evs)
	if len(m.turns) != 5 {
		t.Fatalf("%d turns, want 5", len(m.turns))
	}
	for _, tr := range m.turns {
		if got := [2]string{tr.thinking.String(), tr.answer.String()}; got != want[tr.step] {
			t.Errorf("step %d text = %q, want %q", tr.step, got, want[tr.step])
		}
	}
	if n := m.countSteps(); n != 5 {
		t.Errorf("timeline has %d steps, want 5", n)
	}
	if !strings.Contains(out.String(), "Wi-Fi is on") {
		t.Errorf("the result never reached the output:\n%q", out.String())
	}
	// The user's title is saved before droidgo sets its own and restored
	// after bubbletea clears it, instead of being left empty.
	o := out.String()
	push, set, clear, pop := strings.Index(o, "\x1b[22;0t"), strings.Index(o, "\x1b]2;droidgo"), strings.LastIndex(o, "\x1b]2;\a"), strings.LastIndex(o, "\x1b[23;0t")
	if push != 0 || set < push || clear < set || pop < clear {
		t.Errorf("title push %d, set %d, clear %d, pop %d", push, set, clear, pop)
	}
	// After Run, the loop must still never block.
	for range 1000 {
		u.Send(loop.Event{Type: loop.EvWarning, Text: "late"})
	}
	if d, err := u.Approve(context.Background(), loop.ApprovalRequest{Why: loop.ApprovalSensitive}); err != nil || d.Verdict != loop.Abort {
		t.Errorf("Approve after Run = %+v, %v; want Abort", d, err)
	}
}

// TestRunKeysApprovePauseQuit drives a running UI through its input like a
// user at a terminal: approve a sensitive call, pause and resume, quit.
func TestRunKeysApprovePauseQuit(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	u := New(Options{In: pr, Out: io.Discard, Width: 80, Height: 24, Cancel: cancel})

	// The observer runs on the UI's goroutine; it reports states the test
	// waits for.
	var mu sync.Mutex
	waiters := map[string]chan struct{}{}
	conds := map[string]func(*ui) bool{
		"approval": func(m *ui) bool { return len(m.approvals) == 1 },
		"paused":   func(m *ui) bool { return m.paused },
		"resumed":  func(m *ui) bool { return !m.paused && m.message == "resumed" },
		"stopping": func(m *ui) bool { return m.stopping },
	}
	for k := range conds {
		waiters[k] = make(chan struct{})
	}
	u.observe = func(m *ui) {
		mu.Lock()
		defer mu.Unlock()
		for k, c := range conds {
			if c(m) {
				close(waiters[k])
				delete(conds, k)
			}
		}
	}
	await := func(k string) {
		t.Helper()
		select {
		case <-waiters[k]:
		case <-time.After(hangGuard):
			t.Fatalf("the UI never reached %q", k)
		}
	}
	key := func(s string) {
		t.Helper()
		if _, err := pw.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	done := runUI(t, u)

	decided := make(chan loop.Decision, 1)
	go func() {
		d, err := u.Approve(ctx, loop.ApprovalRequest{Step: 1, Why: loop.ApprovalSensitive, Reason: "label \"Pay\"",
			Call: action.Call{Name: "tap", Arguments: map[string]any{"index": int64(2)}}})
		if err != nil {
			t.Errorf("Approve: %v", err)
		}
		decided <- d
	}()
	await("approval")
	key("y")
	if d := <-decided; d.Verdict != loop.Approve {
		t.Fatalf("decision = %+v, want Approve", d)
	}

	key("p")
	await("paused")
	// While paused, events keep flowing: Send returns at once.
	for _, ev := range []loop.Event{{Type: loop.EvThinking, Step: 1, Text: "still streaming"}, {Type: loop.EvToolCall, Step: 1}, {Type: loop.EvStepStarted, Step: 2}} {
		sent := make(chan struct{})
		go func() {
			u.Send(ev)
			close(sent)
		}()
		select {
		case <-sent:
		case <-time.After(hangGuard):
			t.Fatalf("Send of %s blocked while paused", ev.Type)
		}
	}
	held := make(chan error, 1)
	go func() { held <- u.Hold(ctx, loop.HoldTurn) }()
	// While paused, the next step must not start. (A wait can only show
	// the hold, not prove it; a broken hold fails here most runs.)
	select {
	case err := <-held:
		t.Fatalf("Hold returned while paused (%v)", err)
	case <-time.After(100 * time.Millisecond):
	}
	key("p")
	await("resumed")
	select {
	case err := <-held:
		if err != nil {
			t.Fatalf("Hold after resume = %v", err)
		}
	case <-time.After(hangGuard):
		t.Fatal("Hold still held after resume")
	}

	key("q")
	await("stopping")
	if ctx.Err() == nil {
		t.Fatal("quit did not cancel the run")
	}
	// The loop finishes and closes; only then does the UI leave.
	u.Send(loop.Event{Type: loop.EvFinished, Result: &loop.Result{Reason: "cancelled"}})
	u.Close()
	if err := waitErr(t, done); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if u.final.result == nil {
		t.Error("the final result was not shown before leaving")
	}
}

func TestRunEndsWithContext(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	ctx, cancel := context.WithCancel(context.Background())
	u := New(Options{In: pr, Out: io.Discard, Width: 80, Height: 24})
	done := make(chan error, 1)
	go func() { done <- u.Run(ctx) }()
	u.Send(loop.Event{Type: loop.EvRunStarted, Task: "x"})
	cancel()
	u.Close()
	if err := waitErr(t, done); err != context.Canceled {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
}

func TestApproveWithoutAsking(t *testing.T) {
	u := New(Options{})
	req := loop.ApprovalRequest{Step: 1, Call: action.Call{Name: "wait", Arguments: map[string]any{"seconds": 1.0}}}
	d, err := u.Approve(context.Background(), req)
	if err != nil || d.Verdict != loop.Approve {
		t.Fatalf("non-sensitive call outside step mode: %+v, %v", d, err)
	}
	// While paused, even that waits; the context can end the wait.
	u.gate.setPaused(true)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := u.Approve(ctx, req); err != context.Canceled {
		t.Fatalf("paused Approve with a cancelled context = %v", err)
	}
	// A sensitive call withdrawn by its context leaves the queue with a
	// withdrawal the UI uses to drop the prompt.
	u.gate.setPaused(false)
	if _, err := u.Approve(ctx, loop.ApprovalRequest{Why: loop.ApprovalSensitive}); err != context.Canceled {
		t.Fatalf("sensitive Approve with a cancelled context = %v", err)
	}
	items, _ := u.q.drain()
	var asked, withdrawn *approval
	for _, it := range items {
		if it.appr != nil {
			asked = it.appr
		}
		if it.withdraw != nil {
			withdrawn = it.withdraw
		}
	}
	if asked == nil || withdrawn != asked {
		t.Fatalf("queue = %+v", items)
	}
}

// TestHold: Hold returns at once unless paused; while paused it waits for
// resume, returns ctx's error when ctx ends, and holds nothing once the UI
// has stopped.
func TestHold(t *testing.T) {
	u := New(Options{})
	if err := u.Hold(context.Background(), loop.HoldAction); err != nil {
		t.Fatalf("Hold while running = %v", err)
	}
	u.gate.setPaused(true)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := u.Hold(ctx, loop.HoldTurn); err != context.Canceled {
		t.Fatalf("paused Hold with a cancelled context = %v", err)
	}
	held := make(chan error, 1)
	go func() { held <- u.Hold(context.Background(), loop.HoldTurn) }()
	select {
	case err := <-held:
		t.Fatalf("Hold returned while paused (%v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	u.gate.stop() // the UI quits: nobody can resume any more
	select {
	case err := <-held:
		if err != nil {
			t.Fatalf("Hold after the UI stopped = %v", err)
		}
	case <-time.After(hangGuard):
		t.Fatal("Hold still held after the UI stopped")
	}
}

// TestRunFlood streams 100k tokens through a running UI: the loop side
// never waits, and the drawn state holds every token and every warning.
func TestRunFlood(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	u := New(Options{In: pr, Out: io.Discard, Width: 120, Height: 40, ExitOnFinish: true})
	done := runUI(t, u)
	text, warnings := flood(u.Send, 100_000)
	u.Close()
	if err := waitErr(t, done); err != nil {
		t.Fatal(err)
	}
	m := u.final
	for _, tr := range m.turns {
		if got := [2]string{tr.thinking.String(), tr.answer.String()}; got != text[tr.step] {
			t.Errorf("step %d: text differs (%d+%d bytes, want %d+%d)", tr.step,
				len(got[0]), len(got[1]), len(text[tr.step][0]), len(text[tr.step][1]))
		}
	}
	var got []string
	for _, e := range m.timeline {
		got = append(got, e.warnings...)
	}
	if strings.Join(got, "|") != strings.Join(warnings, "|") {
		t.Errorf("%d warnings shown, want %d in order", len(got), len(warnings))
	}
	if m.result == nil {
		t.Error("no result")
	}
}

func TestKeyboardNotFromRedirectedStdin(t *testing.T) {
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	in, closeIn := keyboard(f)
	defer closeIn()
	if in == io.Reader(f) {
		t.Fatal("keys would be read from /dev/null instead of the terminal")
	}
	pr, pw := io.Pipe()
	defer pw.Close()
	if in, _ := keyboard(pr); in != io.Reader(pr) {
		t.Fatal("a reader that is not a file must be used as it is")
	}
}
