package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// gateWriter blocks every write until it is opened, as a terminal or a
// pipe nobody reads does.
type gateWriter struct {
	open    chan struct{}
	mu      sync.Mutex
	waiting bool
	buf     bytes.Buffer
}

func (g *gateWriter) Write(p []byte) (int, error) {
	g.mu.Lock()
	g.waiting = true
	g.mu.Unlock()
	<-g.open
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.buf.Write(p)
}

func (g *gateWriter) blocked() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.waiting && g.buf.Len() == 0
}

// TestStalledStdoutDoesNotHoldTheRun: with standard output stalled (a
// pipe nobody reads), a run goes on at its own pace: it finishes, and its
// recording is written complete and identical to a run's with a free
// stdout (the shipped one, made on the same fake clock), while the
// printer is still blocked on its first line. Once stdout moves, every
// line is printed and the command succeeds.
func TestStalledStdoutDoesNotHoldTheRun(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.fakeClock()
	rec := filepath.Join(t.TempDir(), "wifi.jsonl")
	out := &gateWriter{open: make(chan struct{})}
	var errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- executeWith(h.deps(context.Background(), strings.NewReader(""), out, &errb),
			[]string{"run", "--sim", "wifi", "--model", scriptFor("wifi", "40ms"), "--no-tui", "--record", rec})
	}()
	want, err := os.ReadFile(filepath.Join(fixturesDir, "recordings", "wifi.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// The recording may be complete before the printer's goroutine has
	// reached its first write: wait for both, the gate still shut.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got, _ := os.ReadFile(rec)
		if bytes.Equal(got, want) && out.blocked() {
			break
		}
		if time.Now().After(deadline) {
			close(out.open)
			<-done
			t.Fatalf("the recording was not completed while stdout was stalled (blocked: %v):\n%.3000s", out.blocked(), got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case code := <-done:
		t.Fatalf("the command ended (exit %d) before its output was written", code)
	default:
	}
	close(out.open)
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if s := out.buf.String(); !strings.HasPrefix(s, "task:     Turn on Wi-Fi") || !strings.Contains(s, "result:   SUCCESS: task_complete") {
		t.Errorf("output:\n%s", s)
	}
}
