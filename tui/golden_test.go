package tui

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/loop"
	"github.com/droidgo/droidgo/tui/internal/demo"
)

var update = flag.Bool("update", false, "rewrite the golden frames in testdata/")

// goldenStates builds the key states of the UI from the canned run.
var goldenStates = []struct {
	name string
	w, h int
	opts Options
	// build drives the model into the state.
	build func(m *ui, c *fakeClock)
}{
	{"initial", 80, 24, Options{Task: "Turn on Wi-Fi", Device: "sim:wifi", MaxSteps: 20}, func(m *ui, c *fakeClock) {}},
	{"thinking", 80, 24, Options{}, func(m *ui, c *fakeClock) {
		evs := demoUntil(loop.EvThinking, 20) // mid-way through step 2's thinking
		send(m, evs...)
		c.t = c.t.Add(7 * time.Second)
		m.Update(tickMsg(c.t))
	}},
	{"highlighted", 80, 24, Options{}, func(m *ui, c *fakeClock) {
		send(m, demoUntil(loop.EvAction, 2)...)
		c.t = c.t.Add(9 * time.Second)
		m.Update(tickMsg(c.t))
	}},
	{"approval", 80, 24, Options{}, func(m *ui, c *fakeClock) {
		send(m, demoUntil(loop.EvToolCall, 4)...)
		call := action.Call{Name: "tap", Arguments: map[string]any{"index": int64(1)}}
		send(m, loop.Event{Type: loop.EvApproval, Step: 4, Call: &call, Element: ptr(1), Approval: loop.ApprovalSensitive, Text: `label "Wi-Fi (off)" matches the sensitive word "Wi-Fi"`})
		m.Update(batchMsg{items: []item{{appr: &approval{req: loop.ApprovalRequest{Step: 4, Call: call, Label: "Wi-Fi (off)",
			Why: loop.ApprovalSensitive, Reason: `label "Wi-Fi (off)" matches the sensitive word "Wi-Fi"`}, reply: make(chan loop.Decision, 1)}}}})
	}},
	{"edit", 80, 24, Options{StepMode: true}, func(m *ui, c *fakeClock) {
		send(m, demoUntil(loop.EvToolCall, 3)...)
		call := action.Call{Name: "tap", Arguments: map[string]any{"index": int64(1)}}
		m.Update(batchMsg{items: []item{{appr: &approval{req: loop.ApprovalRequest{Step: 3, Call: call, Label: "Internet", Why: loop.ApprovalStepMode, Reason: "step mode"},
			reply: make(chan loop.Decision, 1)}}}})
		press(m, "e", "backspace", "backspace")
		typeText(m, "9") // no closing parenthesis: the edit is refused
		press(m, "enter")
	}},
	{"paused", 80, 24, Options{Replay: true}, func(m *ui, c *fakeClock) {
		send(m, demoUntil(loop.EvScreenChange, 1)...)
		press(m, "p", "tab")
	}},
	{"success", 80, 24, Options{Replay: true}, func(m *ui, c *fakeClock) {
		send(m, demo.Events()...)
	}},
	{"failure", 80, 24, Options{}, func(m *ui, c *fakeClock) {
		evs := demoUntil(loop.EvScreenChange, 3)
		evs = append(evs,
			loop.Event{Type: loop.EvStepStarted, Step: 4, Screen: evs[len(evs)-1].Screen},
			loop.Event{Type: loop.EvToolCall, Step: 4, Parse: &loop.ParseInfo{Errors: []string{"no tool call in the answer"}}},
			loop.Event{Type: loop.EvWarning, Step: 4, Text: "three steps in a row without a usable call"},
			loop.Event{Type: loop.EvFinished, Result: &loop.Result{Reason: "the model gave no usable call three times", Steps: 4, Seconds: 41.5}})
		send(m, evs...)
	}},
	{"wide", 160, 48, Options{}, func(m *ui, c *fakeClock) {
		send(m, demoUntil(loop.EvAnswer, 20)...) // step 2's answer streaming
		c.t = c.t.Add(65 * time.Second)
		m.Update(tickMsg(c.t))
	}},
	{"wide-success", 160, 48, Options{}, func(m *ui, c *fakeClock) {
		send(m, demo.Events()...)
		press(m, "tab", "tab")
	}},
	{"side-by-side", 120, 30, Options{StepMode: true}, func(m *ui, c *fakeClock) {
		send(m, demoUntil(loop.EvAction, 4)...)
		press(m, "?")
	}},
}

func TestGoldenFrames(t *testing.T) {
	for _, gs := range goldenStates {
		t.Run(gs.name, func(t *testing.T) {
			m, c := newTestUI(t, gs.opts, gs.w, gs.h)
			gs.build(m, c)
			got := frame(m)
			checkFrame(t, got, gs.w, gs.h)
			path := filepath.Join("testdata", fmt.Sprintf("%s-%dx%d.golden", gs.name, gs.w, gs.h))
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./tui -run TestGoldenFrames -update)", err)
			}
			if got != string(want) {
				t.Errorf("frame differs from %s (rerun with -update if the change is intended)\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
			}
		})
	}
}

// checkFrame asserts a frame fills the terminal exactly: h lines of at most
// w cells.
func checkFrame(t *testing.T, f string, w, h int) {
	t.Helper()
	lines := strings.Split(f, "\n")
	if len(lines) != h {
		t.Errorf("%dx%d: frame has %d lines, want %d", w, h, len(lines), h)
	}
	for i, l := range lines {
		if n := ansi.StringWidth(l); n > w {
			t.Errorf("%dx%d: line %d is %d cells wide: %q", w, h, i+1, n, l)
		}
	}
}

// TestFramesFitAnySize draws every golden state at many sizes, from a
// cramped terminal to a wide one, with and without colour codes.
func TestFramesFitAnySize(t *testing.T) {
	for _, gs := range goldenStates {
		m, c := newTestUI(t, gs.opts, gs.w, gs.h)
		gs.build(m, c)
		for w := 8; w <= 200; w += 24 {
			for h := 3; h <= 60; h += 14 {
				m.Update(teaSize(w, h))
				checkFrame(t, frame(m), w, h)
				if lines := strings.Split(m.render(), "\n"); len(lines) != h {
					t.Errorf("%s %dx%d: styled frame has %d lines", gs.name, w, h, len(lines))
				}
			}
		}
	}
}
