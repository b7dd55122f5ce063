package tui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/loop"
	"github.com/droidgo/droidgo/model"
	"github.com/droidgo/droidgo/tui/internal/demo"
)

func ptr[T any](v T) *T { return &v }

func TestUpdateEvents(t *testing.T) {
	tap := func(i int64) *action.Call { return &action.Call{Name: "tap", Arguments: map[string]any{"index": i}} }
	screen := &loop.ScreenInfo{App: "com.android.settings", Elements: []loop.ElementInfo{{Index: 0, Label: "A"}, {Index: 1, Label: "B"}}}
	tests := []struct {
		name  string
		evs   []loop.Event
		check func(t *testing.T, m *ui)
	}{
		{"run_started fills the header", []loop.Event{{Type: loop.EvRunStarted, Task: "T", Device: "D", Model: "M", MaxSteps: 7}},
			func(t *testing.T, m *ui) {
				if m.task != "T" || m.device != "D" || m.modelName != "M" || m.maxSteps != 7 {
					t.Errorf("header = %q %q %q %d", m.task, m.device, m.modelName, m.maxSteps)
				}
			}},
		{"tokens stream into thinking and answer apart", []loop.Event{
			{Type: loop.EvStepStarted, Step: 1, Screen: screen},
			{Type: loop.EvThinking, Step: 1, Text: "I "}, {Type: loop.EvAnswer, Step: 1, Text: "tap"},
			{Type: loop.EvThinking, Step: 1, Text: "think"}, {Type: loop.EvAnswer, Step: 1, Text: "(index=1)"},
		}, func(t *testing.T, m *ui) {
			if got := m.cur().thinking.String(); got != "I think" {
				t.Errorf("thinking = %q", got)
			}
			if got := m.cur().answer.String(); got != "tap(index=1)" {
				t.Errorf("answer = %q", got)
			}
		}},
		{"a new step clears the text and the target", []loop.Event{
			{Type: loop.EvStepStarted, Step: 1, Screen: screen},
			{Type: loop.EvThinking, Step: 1, Text: "old"},
			{Type: loop.EvToolCall, Step: 1, Call: tap(1)},
			{Type: loop.EvStepStarted, Step: 2, Screen: screen},
		}, func(t *testing.T, m *ui) {
			if m.cur().thinking.Len() != 0 || m.target != nil || m.step != 2 {
				t.Errorf("thinking %q target %v step %d", m.cur().thinking.String(), m.target, m.step)
			}
			if len(m.timeline) != 2 {
				t.Errorf("timeline has %d rows, want 2", len(m.timeline))
			}
		}},
		{"a tool call targets its element", []loop.Event{
			{Type: loop.EvStepStarted, Step: 1, Screen: screen},
			{Type: loop.EvToolCall, Step: 1, Call: tap(1), Parse: &loop.ParseInfo{Recoveries: []string{"fixed quotes"}}},
		}, func(t *testing.T, m *ui) {
			if m.target == nil || *m.target != 1 {
				t.Errorf("target = %v, want 1", m.target)
			}
			if e := m.timeline[0]; e.call == nil || len(e.recoveries) != 1 {
				t.Errorf("entry = %+v", e)
			}
		}},
		{"the action's element wins over the call's", []loop.Event{
			{Type: loop.EvStepStarted, Step: 1, Screen: screen},
			{Type: loop.EvToolCall, Step: 1, Call: tap(1)},
			{Type: loop.EvAction, Step: 1, Call: tap(0), Element: ptr(0), Outcome: loop.OutcomeDone, Detail: "tap 1 2"},
			{Type: loop.EvScreenChange, Step: 1, Changed: ptr(false)},
		}, func(t *testing.T, m *ui) {
			e := m.timeline[0]
			if *m.target != 0 || !e.acted || e.call.String() != "tap(index=0)" || e.changed == nil || *e.changed {
				t.Errorf("target %d entry %+v", *m.target, e)
			}
		}},
		{"failed actions, parse errors and warnings are kept", []loop.Event{
			{Type: loop.EvStepStarted, Step: 1},
			{Type: loop.EvToolCall, Step: 1, Parse: &loop.ParseInfo{Errors: []string{"no call found"}}},
			{Type: loop.EvAction, Step: 1, Call: tap(9), Outcome: loop.OutcomeNotRun, Error: "index 9 is not on the screen"},
			{Type: loop.EvWarning, Step: 1, Text: "same action repeated"},
		}, func(t *testing.T, m *ui) {
			e := m.timeline[0]
			if e.err == "" || len(e.parseErrs) != 1 || len(e.warnings) != 1 {
				t.Errorf("entry = %+v", e)
			}
		}},
		{"tokens go to their own step's turn", []loop.Event{
			{Type: loop.EvStepStarted, Step: 1},
			{Type: loop.EvThinking, Step: 1, Text: "one"},
			// Step 2's step_started was not seen (a recording cut at its
			// start): its tokens still get a turn of their own.
			{Type: loop.EvThinking, Step: 2, Text: "two"},
			{Type: loop.EvAnswer, Step: 2, Text: "tap"},
		}, func(t *testing.T, m *ui) {
			if len(m.turns) != 2 || m.turns[0].step != 1 || m.turns[1].step != 2 {
				t.Fatalf("turns = %d", len(m.turns))
			}
			if a, b := m.turns[0].thinking.String(), m.turns[1].thinking.String(); a != "one" || b != "two" {
				t.Errorf("thinking = %q, %q", a, b)
			}
			if got := m.cur().answer.String(); got != "tap" {
				t.Errorf("answer = %q", got)
			}
		}},
		{"stats set tokens per second", []loop.Event{{Type: loop.EvModelStats, Step: 1, Stats: &loop.StatsInfo{TokensPerSecond: 31.5}}},
			func(t *testing.T, m *ui) {
				if m.tps != 31.5 {
					t.Errorf("tps = %v", m.tps)
				}
			}},
		{"finished keeps the result", []loop.Event{{Type: loop.EvFinished, Result: &loop.Result{Success: true, Steps: 4, Reason: "task_complete"}}},
			func(t *testing.T, m *ui) {
				if m.result == nil || !m.result.Success || m.step != 4 {
					t.Errorf("result %+v step %d", m.result, m.step)
				}
			}},
		{"escape sequences in model text are removed", []loop.Event{{Type: loop.EvThinking, Step: 1, Text: "a\x1b[2Jb\x07c\td"}},
			func(t *testing.T, m *ui) {
				if got := m.cur().thinking.String(); got != "abc    d" {
					t.Errorf("thinking = %q", got)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := newTestUI(t, Options{}, 80, 24)
			send(m, tt.evs...)
			tt.check(t, m)
			_ = frame(m) // every state must draw
		})
	}
}

func TestKeys(t *testing.T) {
	tests := []struct {
		name  string
		opts  Options
		keys  []string
		check func(t *testing.T, m *ui)
	}{
		{"tab cycles the panes", Options{}, []string{"tab", "tab"}, func(t *testing.T, m *ui) {
			if m.focus != paneTimeline {
				t.Errorf("focus = %v", m.focus)
			}
		}},
		{"shift+tab goes back", Options{}, []string{"shift+tab"}, func(t *testing.T, m *ui) {
			if m.focus != paneTimeline {
				t.Errorf("focus = %v", m.focus)
			}
		}},
		{"p pauses and holds the gate", Options{}, []string{"p"}, func(t *testing.T, m *ui) {
			if !m.paused || !m.gate.isPaused() {
				t.Errorf("paused %v gate %v", m.paused, m.gate.isPaused())
			}
		}},
		{"p twice resumes", Options{}, []string{"p", "space"}, func(t *testing.T, m *ui) {
			if m.paused || m.gate.isPaused() {
				t.Errorf("paused %v gate %v", m.paused, m.gate.isPaused())
			}
		}},
		{"s toggles step mode in a step-mode run", Options{StepMode: true}, []string{"s"}, func(t *testing.T, m *ui) {
			if m.stepMode || m.gate.inStepMode() {
				t.Error("step mode still on")
			}
		}},
		{"s cannot start step mode the loop does not do", Options{}, []string{"s"}, func(t *testing.T, m *ui) {
			if m.stepMode || m.gate.inStepMode() || !strings.Contains(m.message, "live runs") {
				t.Errorf("step mode %v message %q", m.stepMode, m.message)
			}
		}},
		{"p does nothing once the run has ended", Options{}, []string{"q", "p"}, func(t *testing.T, m *ui) {
			if m.paused || m.gate.isPaused() {
				t.Error("paused a stopping run")
			}
		}},
		{"switching step mode off lets a step-mode call go", Options{StepMode: true}, nil, func(t *testing.T, m *ui) {
			plain := &approval{req: loop.ApprovalRequest{Call: action.Call{Name: "wait"}, Reason: "step mode"}, reply: make(chan loop.Decision, 1)}
			sens := &approval{req: loop.ApprovalRequest{Call: action.Call{Name: "wait"}, Why: loop.ApprovalSensitive}, reply: make(chan loop.Decision, 1)}
			m.Update(batchMsg{items: []item{{appr: plain}, {appr: sens}}})
			press(m, "s")
			select {
			case d := <-plain.reply:
				if d.Verdict != loop.Approve {
					t.Errorf("step-mode call answered %v", d.Verdict)
				}
			default:
				t.Error("the step-mode call still waits")
			}
			if len(m.approvals) != 1 || m.approvals[0] != sens || len(sens.reply) != 0 {
				t.Error("the sensitive call must still wait")
			}
		}},
		{"? shows all keys", Options{}, []string{"?"}, func(t *testing.T, m *ui) {
			if !m.help.ShowAll {
				t.Error("full help not shown")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := newTestUI(t, tt.opts, 80, 24)
			press(m, tt.keys...)
			tt.check(t, m)
		})
	}
}

func TestLiveRate(t *testing.T) {
	m, c := newTestUI(t, Options{}, 80, 24)
	send(m, loop.Event{Type: loop.EvStepStarted, Step: 1})
	m.Update(batchMsg{items: []item{{ev: loop.Event{Type: loop.EvThinking, Step: 1, Text: "a"}, tokens: 1}}})
	c.t = c.t.Add(2 * time.Second)
	// 40 tokens coalesced into one event still count as 40.
	m.Update(batchMsg{items: []item{{ev: loop.Event{Type: loop.EvThinking, Step: 1, Text: "b"}, tokens: 40}}})
	if tps, live := m.rate(); !live || tps != 20 {
		t.Fatalf("rate = %v (live %v), want 20 live", tps, live)
	}
	if !strings.Contains(frame(m), "~20.0 tok/s") {
		t.Fatalf("live rate not shown:\n%s", frame(m))
	}
	send(m, loop.Event{Type: loop.EvModelStats, Step: 1, Stats: &loop.StatsInfo{TokensPerSecond: 18.5}})
	if tps, live := m.rate(); live || tps != 18.5 {
		t.Fatalf("after stats: rate = %v (live %v), want 18.5", tps, live)
	}
}

func TestScrolling(t *testing.T) {
	m, _ := newTestUI(t, Options{}, 80, 24)
	send(m, loop.Event{Type: loop.EvStepStarted, Step: 1})
	send(m, loop.Event{Type: loop.EvThinking, Step: 1, Text: strings.Repeat("many words of thought ", 200)})
	vis := m.paneHeight(paneThinking)
	total, _ := m.paneLines(paneThinking, m.paneInnerWidth(paneThinking))
	if len(total) <= vis {
		t.Fatalf("content (%d lines) fits the pane (%d); the test needs more", len(total), vis)
	}
	bottom := len(total) - vis
	if got := m.offset(paneThinking, len(total), vis, -1); got != bottom {
		t.Fatalf("following offset = %d, want the bottom %d", got, bottom)
	}
	press(m, "up", "up")
	if s := m.scroll[paneThinking]; s.follow || s.offset != bottom-2 {
		t.Fatalf("after up up: %+v, want offset %d", s, bottom-2)
	}
	// New text does not move a pane the user scrolled.
	send(m, loop.Event{Type: loop.EvThinking, Step: 1, Text: "more "})
	if s := m.scroll[paneThinking]; s.follow || s.offset != bottom-2 {
		t.Fatalf("after new text: %+v", s)
	}
	press(m, "g")
	if s := m.scroll[paneThinking]; s.offset != 0 || s.follow {
		t.Fatalf("after g: %+v", s)
	}
	press(m, "pgdown")
	if s := m.scroll[paneThinking]; s.offset != vis-1 {
		t.Fatalf("after pgdown: %+v, want offset %d", s, vis-1)
	}
	press(m, "G")
	if s := m.scroll[paneThinking]; !s.follow {
		t.Fatalf("after G: %+v", s)
	}
	// Scrolling down to the end follows again.
	press(m, "up", "down")
	if s := m.scroll[paneThinking]; !s.follow {
		t.Fatalf("after up down: %+v", s)
	}
	// The screen pane centres the target element while following.
	els := make([]loop.ElementInfo, 40)
	for i := range els {
		els[i] = loop.ElementInfo{Index: i, Label: "item"}
	}
	send(m, loop.Event{Type: loop.EvStepStarted, Step: 2, Screen: &loop.ScreenInfo{Elements: els}},
		loop.Event{Type: loop.EvToolCall, Step: 2, Call: &action.Call{Name: "tap", Arguments: map[string]any{"index": int64(30)}}})
	vis = m.paneHeight(paneElements)
	_, target := m.paneLines(paneElements, m.paneInnerWidth(paneElements))
	off := m.offset(paneElements, 40, vis, target)
	if off > 30 || off+vis <= 30 {
		t.Fatalf("target 30 not visible: offset %d, %d lines", off, vis)
	}
	if !strings.Contains(frame(m), "▶ 30") {
		t.Fatalf("target not drawn:\n%s", frame(m))
	}
}

func TestApprovalKeys(t *testing.T) {
	req := loop.ApprovalRequest{Step: 3, Call: action.Call{Name: "tap", Arguments: map[string]any{"index": int64(2)}},
		Label: "Pay", Why: loop.ApprovalSensitive, Reason: `label "Pay" matches the sensitive word "Pay"`}
	tests := []struct {
		name    string
		keys    []string
		typed   string // typed after the keys, in edit mode
		enter   bool
		want    *loop.Decision
		editing bool
		errSub  string
		msgSub  string // in the message line after the answer
	}{
		{name: "y approves", keys: []string{"y"}, want: &loop.Decision{Verdict: loop.Approve}},
		{name: "enter approves", keys: []string{"enter"}, want: &loop.Decision{Verdict: loop.Approve}},
		{name: "n skips", keys: []string{"n"}, want: &loop.Decision{Verdict: loop.Skip}},
		{name: "a aborts", keys: []string{"a"}, want: &loop.Decision{Verdict: loop.Abort}},
		{name: "other keys do not answer", keys: []string{"x", "tab", "p"}},
		{name: "e then enter runs the prefilled call", keys: []string{"e"}, enter: true,
			want: &loop.Decision{Verdict: loop.Edit, Call: req.Call}},
		{name: "an edited call is parsed", keys: []string{"e", "ctrl+u"}, typed: "press_key(key=back)", enter: true,
			want: &loop.Decision{Verdict: loop.Edit, Call: action.Call{Name: "press_key", Arguments: map[string]any{"key": "back"}}}},
		{name: "JSON is accepted", keys: []string{"e", "ctrl+u"}, typed: `{"name":"tap","arguments":{"index":4}}`, enter: true,
			want: &loop.Decision{Verdict: loop.Edit, Call: action.Call{Name: "tap", Arguments: map[string]any{"index": int64(4)}}}},
		{name: "what the reader repaired is shown", keys: []string{"e", "ctrl+u"}, typed: "tap(index=1, x=2)", enter: true,
			want:   &loop.Decision{Verdict: loop.Edit, Call: action.Call{Name: "tap", Arguments: map[string]any{"index": int64(1)}}},
			msgSub: `edited to tap(index=1) (tap does not take "x"; dropped it`},
		{name: "an invalid edit stays in edit mode", keys: []string{"e", "ctrl+u"}, typed: "tap(index=", enter: true,
			editing: true, errSub: "missing )"},
		{name: "an unknown tool stays in edit mode", keys: []string{"e", "ctrl+u"}, typed: "fly(to=moon)", enter: true,
			editing: true, errSub: "unknown tool"},
		{name: "an index not on the screen stays in edit mode", keys: []string{"e", "ctrl+u"}, typed: "tap(index=9)", enter: true,
			editing: true, errSub: loop.CheckIndex(9, 6).Error()}, // the loop's own check and words
		{name: "esc leaves edit mode without answering", keys: []string{"e", "esc"}},
		{name: "q in edit mode is typed, not quit", keys: []string{"e", "q"}, editing: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cancelled := false
			m, _ := newTestUI(t, Options{Cancel: func() { cancelled = true }}, 80, 24)
			scr := &loop.ScreenInfo{}
			for i := range 6 {
				scr.Elements = append(scr.Elements, loop.ElementInfo{Index: i, Label: "e"})
			}
			send(m, loop.Event{Type: loop.EvStepStarted, Step: 3, Screen: scr})
			a := &approval{req: req, reply: make(chan loop.Decision, 1)}
			m.Update(batchMsg{items: []item{{appr: a}}})
			press(m, tt.keys...)
			typeText(m, tt.typed)
			if tt.enter {
				press(m, "enter")
			}
			var got *loop.Decision
			select {
			case d := <-a.reply:
				got = &d
			default:
			}
			switch {
			case tt.want == nil && got != nil:
				t.Fatalf("answered %+v, want no answer", *got)
			case tt.want != nil && got == nil:
				t.Fatalf("no answer, want %+v", *tt.want)
			case tt.want != nil && (got.Verdict != tt.want.Verdict || got.Call.String() != tt.want.Call.String()):
				t.Fatalf("answered %+v (%s), want %+v (%s)", *got, got.Call, *tt.want, tt.want.Call)
			}
			if m.editing != tt.editing {
				t.Errorf("editing = %v, want %v", m.editing, tt.editing)
			}
			if tt.errSub != "" && !strings.Contains(m.editErr, tt.errSub) {
				t.Errorf("edit error %q does not say %q", m.editErr, tt.errSub)
			}
			if !strings.Contains(m.message, tt.msgSub) {
				t.Errorf("message %q does not say %q", m.message, tt.msgSub)
			}
			if (got == nil) != (len(m.approvals) == 1) {
				t.Errorf("%d approvals still shown after answer %v", len(m.approvals), got)
			}
			if cancelled {
				t.Error("the run was cancelled")
			}
		})
	}
}

func TestQuit(t *testing.T) {
	t.Run("q while running cancels and waits for the loop", func(t *testing.T) {
		cancels := 0
		m, _ := newTestUI(t, Options{Cancel: func() { cancels++ }}, 80, 24)
		a := &approval{req: loop.ApprovalRequest{Call: action.Call{Name: "wait"}}, reply: make(chan loop.Decision, 1)}
		m.Update(batchMsg{items: []item{{appr: a}}})
		press(m, "p")
		if cmd := press(m, "q"); isQuit(cmd) {
			t.Fatal("quit before the loop closed")
		}
		if cancels != 1 || !m.stopping || m.gate.isPaused() {
			t.Fatalf("cancels %d stopping %v paused %v", cancels, m.stopping, m.gate.isPaused())
		}
		if d := <-a.reply; d.Verdict != loop.Abort {
			t.Fatalf("pending approval answered %v, want Abort", d.Verdict)
		}
		send(m, loop.Event{Type: loop.EvFinished, Result: &loop.Result{Reason: "cancelled"}})
		if _, cmd := m.Update(batchMsg{closed: true}); !isQuit(cmd) {
			t.Fatal("did not quit once the loop closed")
		}
		if cancels != 1 {
			t.Fatalf("cancelled %d times", cancels)
		}
	})
	t.Run("q twice leaves at once", func(t *testing.T) {
		m, _ := newTestUI(t, Options{}, 80, 24)
		press(m, "q")
		if !isQuit(press(m, "q")) {
			t.Fatal("second q did not quit")
		}
	})
	t.Run("ctrl+c quits in edit mode", func(t *testing.T) {
		m, _ := newTestUI(t, Options{}, 80, 24)
		m.Update(batchMsg{items: []item{{appr: &approval{req: loop.ApprovalRequest{Call: action.Call{Name: "wait"}}, reply: make(chan loop.Decision, 1)}}}})
		press(m, "e")
		press(m, "ctrl+c")
		if !m.stopping || m.editing {
			t.Fatalf("stopping %v editing %v", m.stopping, m.editing)
		}
	})
	t.Run("q after the finish quits", func(t *testing.T) {
		m, _ := newTestUI(t, Options{}, 80, 24)
		send(m, demo.Events()...)
		if !isQuit(press(m, "q")) {
			t.Fatal("q did not quit")
		}
	})
	t.Run("ExitOnFinish quits when the loop closes", func(t *testing.T) {
		m, _ := newTestUI(t, Options{ExitOnFinish: true}, 80, 24)
		send(m, demo.Events()[:3]...)
		if _, cmd := m.Update(batchMsg{closed: true}); !isQuit(cmd) {
			t.Fatal("did not quit")
		}
	})
}

func TestInterrupt(t *testing.T) {
	if _, ok := filterInterrupt(nil, tea.InterruptMsg{}).(ctxDoneMsg); !ok {
		t.Fatal("SIGINT is not turned into a clean stop")
	}
	if _, ok := filterInterrupt(nil, tea.KeyPressMsg{}).(tea.KeyPressMsg); !ok {
		t.Fatal("other messages are changed")
	}
	cancels := 0
	m, _ := newTestUI(t, Options{Cancel: func() { cancels++ }}, 80, 24)
	if _, cmd := m.Update(ctxDoneMsg{why: "interrupted"}); isQuit(cmd) {
		t.Fatal("left before the loop closed")
	}
	if cancels != 1 || !m.stopping || !strings.Contains(m.message, "interrupted") {
		t.Fatalf("cancels %d stopping %v message %q", cancels, m.stopping, m.message)
	}
	if _, cmd := m.Update(forceQuitMsg{}); !isQuit(cmd) {
		t.Fatal("the fallback does not quit")
	}
}

func TestWithdrawnApproval(t *testing.T) {
	m, _ := newTestUI(t, Options{}, 80, 24)
	a := &approval{req: loop.ApprovalRequest{Call: action.Call{Name: "wait"}}, reply: make(chan loop.Decision, 1)}
	m.Update(batchMsg{items: []item{{appr: a}}})
	press(m, "e")
	m.Update(batchMsg{items: []item{{withdraw: a}}})
	if len(m.approvals) != 0 || m.editing {
		t.Fatalf("approvals %d editing %v", len(m.approvals), m.editing)
	}
}

// A run that hands every call to the UI lets step mode be switched on
// mid-run; one that does not refuses to pretend.
func TestStepModeOnMidRun(t *testing.T) {
	m, _ := newTestUI(t, Options{Task: "t", EveryCall: true}, 80, 24)
	press(m, "s")
	if !m.stepMode || !m.gate.inStepMode() {
		t.Fatalf("step mode not on: %q", m.message)
	}
	press(m, "s")
	if m.stepMode || m.gate.inStepMode() {
		t.Fatalf("step mode not off: %q", m.message)
	}
	m, _ = newTestUI(t, Options{Task: "t", Replay: true}, 80, 24)
	press(m, "s")
	if m.stepMode {
		t.Fatal("step mode switched on in a run that never asks")
	}
	if strings.Contains(frame(m), "s step mode") {
		t.Errorf("a replay lists s:\n%s", frame(m))
	}
	// A live run started without --step lists the key it answers to.
	m, _ = newTestUI(t, Options{Task: "t", EveryCall: true}, 100, 24)
	if !strings.Contains(frame(m), "s step mode") {
		t.Errorf("a live run does not list s:\n%s", frame(m))
	}
}

// TestApprovalNoteTense: the timeline says "waiting for approval" while
// the call waits and "waited" once it ran.
func TestApprovalNoteTense(t *testing.T) {
	m, _ := newTestUI(t, Options{Task: "t", EveryCall: true}, 100, 30)
	call := action.Call{Name: "tap", Arguments: map[string]any{"index": int64(1)}}
	send(m, loop.Event{Type: loop.EvStepStarted, Step: 1},
		loop.Event{Type: loop.EvToolCall, Step: 1, Call: &call},
		loop.Event{Type: loop.EvApproval, Step: 1, Call: &call, Approval: loop.ApprovalSensitive, Text: "sensitive"})
	if f := frame(m); !strings.Contains(f, "waiting for approval: sensitive") || strings.Contains(f, "waited for") {
		t.Errorf("while waiting:\n%s", f)
	}
	send(m, loop.Event{Type: loop.EvAction, Step: 1, Call: &call, Outcome: loop.OutcomeDone, Detail: "tap 1 1"})
	if f := frame(m); !strings.Contains(f, "waited for approval: sensitive") {
		t.Errorf("after the action:\n%s", f)
	}
}

// TestTypesNotWords: the timeline decides on an action's Outcome and an
// approval's Approval, never on the words of their Detail and Text, so
// rewording the loop's messages changes nothing here.
func TestTypesNotWords(t *testing.T) {
	m, _ := newTestUI(t, Options{Task: "t", EveryCall: true}, 100, 30)
	call := action.Call{Name: "tap", Arguments: map[string]any{"index": int64(1)}}
	send(m, loop.Event{Type: loop.EvStepStarted, Step: 1},
		loop.Event{Type: loop.EvToolCall, Step: 1, Call: &call},
		// Step mode, whatever the text says: no note.
		loop.Event{Type: loop.EvApproval, Step: 1, Call: &call, Approval: loop.ApprovalStepMode, Text: "every call waits (reworded)"},
		// Skipped, in other words.
		loop.Event{Type: loop.EvAction, Step: 1, Call: &call, Outcome: loop.OutcomeSkipped, Detail: "the user said no"},
		loop.Event{Type: loop.EvStepStarted, Step: 2},
		loop.Event{Type: loop.EvToolCall, Step: 2, Call: &call},
		// Sensitive, even when its words say "step mode".
		loop.Event{Type: loop.EvApproval, Step: 2, Call: &call, Approval: loop.ApprovalSensitive, Text: "step mode"},
		// Done, though the words start like a skip.
		loop.Event{Type: loop.EvAction, Step: 2, Call: &call, Outcome: loop.OutcomeDone, Detail: "skipped nothing: tap 1 1"})
	f := frame(m)
	if strings.Contains(f, "reworded") {
		t.Errorf("a step-mode approval got a note:\n%s", f)
	}
	if !strings.Contains(f, "approval: step mode") {
		t.Errorf("a sensitive approval lost its note:\n%s", f)
	}
	if strings.Count(f, "– skipped") != 1 || strings.Count(f, "✓ done") != 1 {
		t.Errorf("want one skipped and one done step:\n%s", f)
	}
}

// The header says how the model runs (run_started's engine) at the end of
// its second line, cut first on a narrow terminal, and with the model's
// control characters removed.
func TestHeaderSaysWhichCores(t *testing.T) {
	eng := &model.Engine{Threads: 4, CPUs: []int{4, 5, 6, 7}, Cores: "CPUs 4-7, the fastest 4 of 8 cores", Kernels: "i8mm"}
	m, _ := newTestUI(t, Options{}, 160, 30)
	send(m, loop.Event{Type: loop.EvRunStarted, Task: "T", Device: "D", Model: "M", MaxSteps: 7, Engine: eng})
	if f := frame(m); !strings.Contains(f, "4 threads on CPUs 4-7, the fastest 4 of 8 cores; kernels i8mm") {
		t.Errorf("the header does not say which cores run the model:\n%s", f)
	}
	narrow, _ := newTestUI(t, Options{}, 60, 30)
	send(narrow, loop.Event{Type: loop.EvRunStarted, Task: "T", Device: "D", Model: "M", MaxSteps: 7, Engine: eng})
	for i, line := range strings.Split(frame(narrow), "\n") {
		if ansi.StringWidth(line) > 60 {
			t.Errorf("line %d is %d wide on a 60-column terminal: %q", i, ansi.StringWidth(line), line)
		}
	}
	evil := &model.Engine{Threads: 1, Cores: "CPUs 0\x1b[2J\x07"}
	send(m, loop.Event{Type: loop.EvRunStarted, Task: "T", Device: "D", Model: "M", MaxSteps: 7, Engine: evil})
	if f := m.render(); strings.Contains(f, "\x1b[2J") || strings.Contains(f, "\x07") {
		t.Error("the engine's text reached the terminal with its control characters")
	}
}
