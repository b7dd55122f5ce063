package loop

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/droidgo/droidgo/model"
)

// breaking wraps a backend whose first `fails` streams break off after
// one delta, as a restarting server's do.
type breaking struct {
	model.Backend
	mu    sync.Mutex
	fails int
	chats int
}

func (b *breaking) Chat(ctx context.Context, req model.ChatRequest) (model.Stream, error) {
	b.mu.Lock()
	b.chats++
	fail := b.chats <= b.fails
	b.mu.Unlock()
	if fail {
		return &brokenStream{}, nil
	}
	return b.Backend.Chat(ctx, req)
}

type brokenStream struct{ sent bool }

func (s *brokenStream) Next() (model.Delta, error) {
	if !s.sent {
		s.sent = true
		return model.Delta{Reasoning: "thinking "}, nil
	}
	return model.Delta{}, errors.New("stream broke off: the server closed the stream before it finished")
}
func (s *brokenStream) CloseReasoning() error { return model.ErrUnsupported }
func (s *brokenStream) Close() error          { return nil }
func (s *brokenStream) Stats() model.Stats    { return model.Stats{} }

// TestStreamErrorIsRetried: a stream that breaks twice is asked again
// after 1 s and 2 s, and the run goes on to succeed.
func TestStreamErrorIsRetried(t *testing.T) {
	var b *breaking
	var slept []time.Duration
	r := runTurns(t, nil, wifiTurns, func(c *Config) {
		b = &breaking{Backend: c.Model, fails: 2}
		c.Model = b
		sleep := c.Sleep
		c.Sleep = func(ctx context.Context, d time.Duration) error {
			if d >= time.Second {
				slept = append(slept, d)
			}
			return sleep(ctx, d)
		}
	})
	if !r.res.Success {
		t.Fatalf("run failed: %s", r.res.Reason)
	}
	if w := r.warnings(); strings.Count(w, "the model's stream failed") != 2 || !strings.Contains(w, "retry 2 of 2") {
		t.Errorf("warnings:\n%s", w)
	}
	if len(slept) != 2 || slept[0] != time.Second || slept[1] != 2*time.Second {
		t.Errorf("backoff %v, want [1s 2s]", slept)
	}
}

// TestStreamErrorEndsTheRunAfterRetries: a stream that keeps breaking ends
// the run after three tries, with a result saying why.
func TestStreamErrorEndsTheRunAfterRetries(t *testing.T) {
	var b *breaking
	r := runTurns(t, nil, wifiTurns, func(c *Config) {
		b = &breaking{Backend: c.Model, fails: 100}
		c.Model = b
	})
	if r.res.Success || !strings.Contains(r.res.Reason, "stream broke off") || !strings.Contains(r.res.Reason, "tried 3 times") {
		t.Errorf("result %+v", r.res)
	}
	if b.chats != 3 || r.res.Steps != 1 {
		t.Errorf("%d requests over %d steps, want 3 in 1", b.chats, r.res.Steps)
	}
}

// TestCorrectiveAnswerIsBounded: a runaway answer without a call goes back
// in the corrective turn cut to maxEcho bytes.
func TestCorrectiveAnswerIsBounded(t *testing.T) {
	huge := strings.Repeat("blah ", 200000)
	r := runTurns(t, nil, []string{"thinking</think>" + huge, thinkThen("ok", call("task_complete", "summary", "x"))}, nil)
	ps := r.of(EvPrompt)
	if len(ps) < 2 {
		t.Fatalf("no corrective prompt")
	}
	m := ps[1].Messages
	echo := m[len(m)-2].Content
	if len(echo) > maxEcho+64 || !strings.Contains(echo, "more bytes cut") {
		t.Errorf("the corrective turn sends back %d bytes", len(echo))
	}
	// A problem quoting a huge name is bounded too.
	r = runTurns(t, nil, []string{"x</think><tool_call>" + strings.Repeat("z", 100000) + "</tool_call>", thinkThen("ok", call("task_complete", "summary", "x"))}, nil)
	ps = r.of(EvPrompt)
	if len(ps) < 2 {
		t.Fatalf("no corrective prompt")
	}
	m = ps[1].Messages
	if n := len(m[len(m)-1].Content) + len(m[len(m)-2].Content); n > 3*maxEcho+1024 {
		t.Errorf("the corrective turn is %d bytes", n)
	}
}

// TestBackendStopIsAWarning: a backend that stopped a turn on its side
// (a server ignoring max_tokens) is named in a warning.
func TestBackendStopIsAWarning(t *testing.T) {
	r := runTurns(t, nil, wifiTurns, func(c *Config) { c.Model = stopping{c.Model} })
	if !strings.Contains(r.warnings(), "ignores max_tokens") {
		t.Errorf("warnings:\n%s", r.warnings())
	}
}

type stopping struct{ model.Backend }

func (s stopping) Chat(ctx context.Context, req model.ChatRequest) (model.Stream, error) {
	st, err := s.Backend.Chat(ctx, req)
	return stoppedStream{st}, err
}

type stoppedStream struct{ model.Stream }

func (s stoppedStream) Stats() model.Stats {
	st := s.Stream.Stats()
	st.Stopped = "the server sent more than the 10 tokens asked for (it ignores max_tokens)"
	return st
}

func TestSteps(t *testing.T) {
	for n, want := range map[int]string{0: "0 steps", 1: "1 step", 2: "2 steps"} {
		if got := Steps(n); got != want {
			t.Errorf("Steps(%d) = %q", n, got)
		}
	}
}

// TestConfigWarningsComeFirst: warnings the caller noticed before the run
// are events right after the start.
func TestConfigWarningsComeFirst(t *testing.T) {
	r := runTurns(t, nil, wifiTurns, func(c *Config) { c.Warnings = []string{"not the scenario's task"} })
	if len(r.events) < 2 || r.events[1].Type != EvWarning || r.events[1].Text != "not the scenario's task" {
		t.Errorf("events start %v", r.events[:2])
	}
}
