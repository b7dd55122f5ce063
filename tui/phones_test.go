package tui

import (
	"strings"
	"testing"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/loop"
)

// onPhone returns evs with their device set.
func onPhone(device string, evs ...loop.Event) []loop.Event {
	out := make([]loop.Event, len(evs))
	for i, ev := range evs {
		ev.Device = device
		out[i] = ev
	}
	return out
}

// TestPhones: a UI of two phones keeps their runs apart, shows one with a
// line of both, switches with ] [ and digits, brings a phone whose call
// waits on screen, and counts the run finished only when both are.
func TestPhones(t *testing.T) {
	m, _ := newTestUI(t, Options{Devices: []string{"sim:wifi", "sim:alarm"}, MaxSteps: 20, EveryCall: true}, 120, 30)
	send(m, onPhone("sim:wifi",
		loop.Event{Type: loop.EvRunStarted, Task: "Turn on Wi-Fi", MaxSteps: 20},
		loop.Event{Type: loop.EvStepStarted, Step: 1, Screen: &loop.ScreenInfo{Prompt: "0 text Wi-Fi"}},
		loop.Event{Type: loop.EvThinking, Step: 1, Text: "wifi thoughts"},
	)...)
	send(m, onPhone("sim:alarm",
		loop.Event{Type: loop.EvRunStarted, Task: "Set an alarm", MaxSteps: 20},
		loop.Event{Type: loop.EvStepStarted, Step: 1},
		loop.Event{Type: loop.EvStepStarted, Step: 2},
		loop.Event{Type: loop.EvThinking, Step: 2, Text: "alarm thoughts"},
	)...)
	f := frame(m)
	if !strings.Contains(f, "Turn on Wi-Fi") || !strings.Contains(f, "wifi thoughts") || strings.Contains(f, "alarm thoughts") {
		t.Fatalf("phone 1 is not the one shown:\n%s", f)
	}
	if !strings.Contains(f, "phones  ▸1 sim:wifi step 1/20  2 sim:alarm step 2/20") {
		t.Errorf("line of phones:\n%s", f)
	}
	for _, k := range []struct{ key, want, not string }{
		{"]", "alarm thoughts", "wifi thoughts"},
		{"[", "wifi thoughts", "alarm thoughts"},
		{"2", "alarm thoughts", "wifi thoughts"},
		{"1", "wifi thoughts", "alarm thoughts"},
	} {
		press(m, k.key)
		if f := frame(m); !strings.Contains(f, k.want) || strings.Contains(f, k.not) {
			t.Errorf("after %s:\n%s", k.key, f)
		}
	}

	// A call of the phone not shown waits: it comes on screen (the user
	// has answered nothing yet, but chose phone 1 by hand: it stays).
	a := &approval{req: loop.ApprovalRequest{Device: "sim:alarm", Step: 2, Call: action.Call{Name: "tap", Arguments: map[string]any{"index": int64(3)}}, Why: loop.ApprovalStepMode}, reply: make(chan loop.Decision, 1)}
	m.Update(batchMsg{items: []item{{appr: a}}})
	if f := frame(m); !strings.Contains(f, "2 sim:alarm ⏸ waits for approval") || !strings.Contains(f, "wifi thoughts") {
		t.Errorf("a pinned phone was left, or the wait is not shown:\n%s", f)
	}
	press(m, "2", "y")
	if d := <-a.reply; d.Verdict != loop.Approve {
		t.Errorf("verdict %v", d.Verdict)
	}
	// Not pinned any more: the next waiting call brings its phone.
	b := &approval{req: loop.ApprovalRequest{Device: "sim:wifi", Step: 1, Call: action.Call{Name: "tap", Arguments: map[string]any{"index": int64(0)}}, Why: loop.ApprovalStepMode}, reply: make(chan loop.Decision, 1)}
	m.Update(batchMsg{items: []item{{appr: b}}})
	if f := frame(m); !strings.Contains(f, "▸1 sim:wifi ⏸ waits for approval") || !strings.Contains(f, "⏸ Approve tap(index=0)") {
		t.Errorf("the waiting phone was not brought on screen:\n%s", f)
	}
	press(m, "n")
	if d := <-b.reply; d.Verdict != loop.Skip {
		t.Errorf("verdict %v", d.Verdict)
	}

	send(m, onPhone("sim:wifi", loop.Event{Type: loop.EvFinished, Result: &loop.Result{Success: true, Reason: "task_complete", Steps: 1}})...)
	if m.finished() {
		t.Error("finished with one phone still running")
	}
	if cmd := press(m, "q"); isQuit(cmd) {
		t.Error("q quit at once with a phone still running")
	}
	send(m, onPhone("sim:alarm", loop.Event{Type: loop.EvFinished, Result: &loop.Result{Reason: "aborted", Steps: 2}})...)
	if !m.finished() || !strings.Contains(frame(m), "1 sim:wifi ✔ done  2 sim:alarm ✘ failed") {
		t.Errorf("after both finished:\n%s", frame(m))
	}
}

// TestOnePhoneIgnoresDevice: a UI of one phone shows every event whatever
// phone it names (a replay of an old recording names none).
func TestOnePhoneIgnoresDevice(t *testing.T) {
	m, _ := newTestUI(t, Options{Device: "sim:wifi"}, 100, 30)
	send(m, loop.Event{Type: loop.EvStepStarted, Step: 1}, loop.Event{Type: loop.EvThinking, Step: 1, Text: "hello", Device: "other"})
	if f := frame(m); !strings.Contains(f, "hello") || strings.Contains(f, "phones") {
		t.Errorf("frame:\n%s", f)
	}
}
