package loop

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/droidgo/droidgo/model/script"
)

// TestHoldPoints: Hold is asked before every turn (each step_started and
// the corrective turn) and after the tool_call of every usable call, each
// time right after an EvHold event naming the stage (what recordings keep
// and replays hold at), and a Hold that returns at once changes nothing.
func TestHoldPoints(t *testing.T) {
	turns := []string{
		thinkThen("Settings.", call("open_app", "name", "Settings")),
		thinkThen("Hmm.", "I am not sure."), // no call: a corrective turn follows
		thinkThen("Network.", call("tap", "index", `{{index "Network & internet"}}`)),
		thinkThen("Done.", call("task_complete", "summary", "x")),
	}
	var seq []string
	r := runTurns(t, nil, turns, func(c *Config) {
		inner := c.OnEvent
		c.OnEvent = func(e Event) {
			inner(e)
			switch e.Type {
			case EvHold:
				seq = append(seq, "hold("+string(e.Stage)+")")
			case EvStepStarted, EvToolCall, EvFinished:
				s := string(e.Type)
				if e.Type == EvToolCall && e.Call == nil {
					s += "(none)"
				}
				seq = append(seq, s)
			}
		}
		c.Hold = func(ctx context.Context, stage Stage) error {
			seq = append(seq, "HOLD "+string(stage))
			return nil
		}
	})
	if !r.res.Success {
		t.Fatalf("result = %+v", r.res)
	}
	want := strings.Join([]string{
		"hold(turn)", "HOLD turn", "step_started", "tool_call", "hold(action)", "HOLD action",
		"hold(turn)", "HOLD turn", "step_started", "tool_call(none)", "hold(turn)", "HOLD turn", "tool_call", "hold(action)", "HOLD action",
		"hold(turn)", "HOLD turn", "step_started", "tool_call", "hold(action)", "HOLD action", "finished",
	}, " | ")
	if got := strings.Join(seq, " | "); got != want {
		t.Errorf("sequence\n got %s\nwant %s", got, want)
	}
}

// TestHoldPausesWithoutBlockingEvents: a Hold that blocks (a paused UI)
// holds the loop at the hold point, with every event before it already
// delivered and nothing run on the device; resuming lets the run go on,
// and cancelling the run while it is held ends it with a result.
func TestHoldPausesWithoutBlockingEvents(t *testing.T) {
	for _, release := range []string{"resume", "cancel"} {
		t.Run(release, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			phone := newFakePhone()
			clock := newClock()
			var mu sync.Mutex
			var events []Event
			held := make(chan Stage, 1)
			resume := make(chan struct{})
			holds := 0
			cfg := Config{
				Task: "Turn on Wi-Fi", Device: phone, Think: true, PollInterval: 10 * time.Millisecond,
				Model: script.New(&script.Script{Name: "s", Turns: wifiTurns}, script.Options{}),
				Now:   clock.Now, Sleep: clock.Sleep,
				OnEvent: func(e Event) {
					mu.Lock()
					events = append(events, e)
					mu.Unlock()
				},
				// The user pauses while the first call streams: the
				// second hold point (before that call runs) holds.
				Hold: func(ctx context.Context, stage Stage) error {
					holds++
					if holds != 2 {
						return nil
					}
					held <- stage
					select {
					case <-resume:
						return nil
					case <-ctx.Done():
						return ctx.Err()
					}
				},
			}
			done := make(chan Result, 1)
			go func() { done <- Run(ctx, cfg) }()
			var stage Stage
			select {
			case stage = <-held:
			case <-time.After(10 * time.Second):
				t.Fatal("the loop never reached a hold point")
			}
			if stage != HoldAction {
				t.Errorf("held at %q, want %q", stage, HoldAction)
			}
			mu.Lock()
			last, call := events[len(events)-1], events[len(events)-2]
			mu.Unlock()
			if last.Type != EvHold || last.Stage != HoldAction {
				t.Errorf("the last event before the hold is %s %q, want the hold event of %q", last.Type, last.Stage, HoldAction)
			}
			if call.Type != EvToolCall || call.Call == nil || call.Call.Name != "open_app" {
				t.Errorf("the event before the hold's is %s %v, want the tool_call of open_app", call.Type, call.Call)
			}
			if got := phone.did(); len(got) != 0 {
				t.Errorf("the device acted while the run was held: %q", got)
			}
			var res Result
			switch release {
			case "resume":
				close(resume)
				res = waitResult(t, done)
				if !res.Success {
					t.Errorf("result after resume = %+v", res)
				}
			case "cancel":
				cancel()
				res = waitResult(t, done)
				if res.Success || res.Reason != "cancelled" {
					t.Errorf("result after cancel = %+v", res)
				}
				if got := phone.did(); len(got) != 0 {
					t.Errorf("the device acted after a cancel while held: %q", got)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if last := events[len(events)-1]; last.Type != EvFinished {
				t.Errorf("the last event is %s", last.Type)
			}
		})
	}
}

func waitResult(t *testing.T, done <-chan Result) Result {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("the run did not end")
	}
	return Result{}
}
