package loop

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/uixml"
)

// TestActionOutcomes: every action event says what became of its call in
// Outcome, one of a fixed set, whatever its Detail and Error say; and
// every event of a run names its device.
func TestActionOutcomes(t *testing.T) {
	open := thinkThen("Settings.", call("open_app", "name", "Settings"))
	pay := thinkThen("Pay.", call("tap", "index", `{{index "Pay now"}}`))
	bad := thinkThen("Tap.", call("tap", "index", "99"))
	clock := thinkThen("Clock.", call("open_app", "name", "Clock"))
	done := thinkThen("Done.", call("task_complete", "summary", "x"))
	cases := []struct {
		name  string
		turns []string
		mod   func(*Config)
		want  []Outcome
	}{
		{"done", []string{open, done}, nil, []Outcome{OutcomeDone, OutcomeDone}},
		{"not run", []string{bad, done}, nil, []Outcome{OutcomeNotRun, OutcomeDone}},
		{"refused", []string{open, pay, done}, nil, []Outcome{OutcomeDone, OutcomeRefused, OutcomeDone}},
		{"skipped", []string{open, pay, done}, func(c *Config) { c.Approver = verdict(Skip)(new([]ApprovalRequest)) },
			[]Outcome{OutcomeDone, OutcomeSkipped, OutcomeDone}},
		// The fake phone has no Clock app to open: the device fails it.
		{"failed", []string{clock, done}, nil, []Outcome{OutcomeFailed, OutcomeDone}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runTurns(t, nil, c.turns, c.mod)
			var got []Outcome
			for _, ev := range r.of(EvAction) {
				got = append(got, ev.Outcome)
			}
			if strings.Join(outcomeNames(got), " ") != strings.Join(outcomeNames(c.want), " ") {
				t.Errorf("outcomes %v, want %v", got, c.want)
			}
			for _, ev := range r.events {
				if ev.Device != "fake" {
					t.Errorf("a %s event names the device %q, want \"fake\"", ev.Type, ev.Device)
				}
			}
		})
	}
}

func outcomeNames(os []Outcome) []string {
	var s []string
	for _, o := range os {
		s = append(s, string(o))
	}
	return s
}

// TestApprovalReasons: an approval event says why the call waits in
// Approval; its Text is for people.
func TestApprovalReasons(t *testing.T) {
	open := thinkThen("Settings.", call("open_app", "name", "Settings"))
	pay := thinkThen("Pay.", call("tap", "index", `{{index "Pay now"}}`))
	done := thinkThen("Done.", call("task_complete", "summary", "x"))
	var asked []ApprovalRequest
	r := runTurns(t, nil, []string{open, pay, done}, func(c *Config) {
		c.StepMode = true
		c.Approver = verdict(Approve)(&asked)
	})
	var got []ApprovalReason
	for _, ev := range r.of(EvApproval) {
		got = append(got, ev.Approval)
	}
	if len(got) != 2 || got[0] != ApprovalStepMode || got[1] != ApprovalSensitive {
		t.Errorf("approval reasons %v", got)
	}
	if len(asked) != 2 || asked[0].Why != ApprovalStepMode || asked[1].Why != ApprovalSensitive {
		t.Errorf("requests %+v", asked)
	}
}

// TestTurnTokens: the token bound of a turn is decided once, and the
// loop applies it to every request that leaves MaxTokens 0.
func TestTurnTokens(t *testing.T) {
	for _, c := range []struct {
		think  bool
		budget int
		want   int
	}{
		{true, 1024, 1024 + AnswerTokens},
		{true, 64, 64 + AnswerTokens},
		{true, 0, MaxTurnTokens},
		{false, 1024, AnswerTokens},
		{false, 0, AnswerTokens},
	} {
		if got := TurnTokens(c.think, c.budget); got != c.want {
			t.Errorf("TurnTokens(%v, %d) = %d, want %d", c.think, c.budget, got, c.want)
		}
		var sp *spy
		runTurns(t, nil, wifiTurns[:1], func(cfg *Config) {
			sp = &spy{Backend: cfg.Model}
			cfg.Model, cfg.Think, cfg.ThinkBudget = sp, c.think, c.budget
		})
		if len(sp.reqs) == 0 || sp.reqs[0].MaxTokens != c.want {
			t.Errorf("think %v, budget %d: requests %+v", c.think, c.budget, sp.reqs)
		}
	}
}

// TestCheckIndex: "is this index on the screen?" has one answer and one
// message, which the loop gives the model.
func TestCheckIndex(t *testing.T) {
	for _, c := range []struct {
		index, elements int
		want            string
	}{
		{0, 3, ""},
		{2, 3, ""},
		{3, 3, "index 3 is not on the screen; valid indices are 0-2"},
		{-1, 3, "index -1 is not on the screen; valid indices are 0-2"},
		{1, 1, "index 1 is not on the screen; valid indices are 0"},
		{0, 0, "index 0 is not on the screen, which has no elements"},
		{0, -1, "index 0 cannot be used: the screen could not be read"},
	} {
		err := CheckIndex(c.index, c.elements)
		var ie *IndexError
		switch {
		case c.want == "" && err != nil:
			t.Errorf("CheckIndex(%d, %d) = %v", c.index, c.elements, err)
		case c.want != "" && (err == nil || err.Error() != c.want || !errors.As(err, &ie) || ie.Index != c.index):
			t.Errorf("CheckIndex(%d, %d) = %v, want %q", c.index, c.elements, err, c.want)
		}
	}
	r := runTurns(t, nil, []string{thinkThen("Tap.", call("tap", "index", "7")), thinkThen("Done.", call("task_complete", "summary", "x"))}, nil)
	if got := r.of(EvAction)[0].Error; got != CheckIndex(7, 2).Error() {
		t.Errorf("the loop says %q, the check %q", got, CheckIndex(7, 2))
	}
}

// TestExecute: the executor's gestures and details, on a screen and
// without one.
func TestExecute(t *testing.T) {
	phone := newFakePhone()
	xml, err := phone.Dump(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	scr, err := uixml.Parse(xml)
	if err != nil {
		t.Fatal(err)
	}
	idx := func(i int64) map[string]any { return map[string]any{"index": i} }
	var slept time.Duration
	sleep := func(_ context.Context, d time.Duration) error { slept += d; return nil }
	for _, c := range []struct {
		scr    *uixml.Screen
		call   action.Call
		detail string
		did    string
	}{
		{scr, action.Call{Name: action.Tap, Arguments: idx(1)}, "tap 540 410", "tap 540 410"},
		{scr, action.Call{Name: action.LongPress, Arguments: idx(0)}, "long press 540 260", "long 540 260"},
		{scr, action.Call{Name: action.Swipe, Arguments: map[string]any{"direction": "up"}}, "swipe 540 1920 540 480", "swipe 540 1920 540 480"},
		{nil, action.Call{Name: action.Swipe, Arguments: map[string]any{"direction": "up"}}, "swipe 540 1920 540 480", "swipe 540 1920 540 480"},
		{nil, action.Call{Name: action.PressKey, Arguments: map[string]any{"key": "back"}}, "key back", "key back"},
		{nil, action.Call{Name: action.TypeText, Arguments: map[string]any{"text": "hi"}}, `type "hi"`, `type "hi"`},
		{nil, action.Call{Name: action.Wait, Arguments: map[string]any{"seconds": 1.5}}, "wait 1.5s", ""},
	} {
		before := len(phone.did())
		d, err := Execute(context.Background(), phone, c.scr, c.call, sleep)
		if err != nil || d.Detail != c.detail {
			t.Errorf("%s: %q, %v; want %q", c.call, d.Detail, err, c.detail)
		}
		did := phone.did()[before:]
		if c.did != "" && (len(did) == 0 || did[0] != c.did) {
			t.Errorf("%s: the phone did %q, want %q", c.call, did, c.did)
		}
	}
	if slept != 1500*time.Millisecond {
		t.Errorf("wait slept %v", slept)
	}
	if _, err := Execute(context.Background(), phone, scr, action.Call{Name: action.Tap, Arguments: idx(9)}, nil); err == nil || err.Error() != CheckIndex(9, len(scr.Elements)).Error() {
		t.Errorf("a tap off the screen: %v", err)
	}
}

// TestTaskCompleteWithoutSummary: task_complete() ends the run at once, as
// a finished task with an empty summary, instead of costing a corrective
// turn.
func TestTaskCompleteWithoutSummary(t *testing.T) {
	r := runTurns(t, nil, []string{thinkThen("Nothing to do.", "<tool_call>task_complete</tool_call>")}, nil)
	if !r.res.Success || r.res.Summary != "" || r.res.Steps != 1 || len(r.of(EvPrompt)) != 1 {
		t.Errorf("result %+v after %d prompts", r.res, len(r.of(EvPrompt)))
	}
}
