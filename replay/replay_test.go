package replay_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/loop"
	"github.com/droidgo/droidgo/model/script"
	"github.com/droidgo/droidgo/recording"
	"github.com/droidgo/droidgo/replay"
	"github.com/droidgo/droidgo/replay/replaytest"
	"github.com/droidgo/droidgo/simulator"
)

// Every shipped recording replays on a fresh phone of its scenario to the
// end state of the recorded run (that of its script run again), also
// without the targets' identities, as a recording made before they were
// recorded (the plan then takes them from the recorded screens' XML), and
// with neither the identities nor the XML (only the element lists).
func TestReplayShippedRecordings(t *testing.T) {
	for _, name := range replaytest.ShippedNames(t) {
		for _, old := range []string{"", "without targets", "without XML"} {
			t.Run(strings.TrimSpace(name+" "+old), func(t *testing.T) {
				rec := replaytest.Shipped(t, name)
				if old != "" {
					for i := range rec.Events {
						rec.Events[i].Target = nil
						if old == "without XML" && rec.Events[i].Screen != nil {
							rec.Events[i].Screen.XML = ""
						}
					}
				}
				plan, err := replay.FromRecording(rec)
				if err != nil {
					t.Fatal(err)
				}
				scenario := strings.TrimPrefix(rec.Header.Device, "sim:")
				phone, err := simulator.Load(scenario)
				if err != nil {
					t.Fatal(err)
				}
				var events []loop.Event
				cfg := replaytest.Config(plan, phone)
				cfg.OnEvent = func(ev loop.Event) { events = append(events, ev) }
				res := replay.Run(context.Background(), cfg)
				if !res.AsRecorded || res.Replayed != res.Total || res.StoppedAt != 0 {
					for _, ev := range events {
						if ev.Type == loop.EvWarning {
							t.Log(ev.Text)
						}
					}
					t.Fatalf("result %+v", res)
				}
				if want := rec.Result(); res.Run.Success != want.Success || res.Run.Reason != want.Reason {
					t.Errorf("ended %+v, recorded %+v", res.Run, *want)
				}
				if want := scriptEnd(t, name, scenario); !reflect.DeepEqual(phone.State(), want) {
					t.Errorf("end state\n%+v\nwant the recorded run's\n%+v", phone.State(), want)
				}
			})
		}
	}
}

// scriptEnd is the end state of the scripted run a shipped recording was
// made of: its script (fixtures/scripts/NAME.txt) run again on a fresh
// phone, with the settings the recordings are made with.
func scriptEnd(t *testing.T, name, scenario string) simulator.State {
	t.Helper()
	phone, err := simulator.Load(scenario)
	if err != nil {
		t.Fatal(err)
	}
	clk := replaytest.NewClock()
	b, err := script.Open(filepath.Join("..", "fixtures", "scripts", name+".txt")+"?pace=0", script.Options{Now: clk.Now, Sleep: clk.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	lc := loop.Config{Task: phone.Task(), Device: phone, Model: b, Think: true, PollInterval: loop.SimulatedPollInterval, Now: clk.Now, Sleep: clk.Sleep}
	if name == "wifi-recover" {
		lc.ThinkBudget = 64 // as fixtures/recordings/README.md says it was made
	}
	loop.Run(context.Background(), lc)
	return phone.State()
}

// Every successful run of the always-right scripts of the task suite
// replays to the same end state on a fresh phone.
func TestReplayEvalRuns(t *testing.T) {
	infos, err := simulator.List()
	if err != nil {
		t.Fatal(err)
	}
	replayed := 0
	for _, in := range infos {
		t.Run(in.Name, func(t *testing.T) {
			t.Parallel()
			phone, err := simulator.Load(in.Name)
			if err != nil {
				t.Fatal(err)
			}
			rec, res, want := replaytest.RunScript(t, phone, in.Name)
			if !res.Success {
				t.Skipf("the scripted run did not succeed (%s): nothing to replay", res.Reason)
			}
			plan, err := replay.FromRecording(rec)
			if errors.Is(err, replay.ErrNothingToReplay) {
				t.Skip("the run carried out no action") // not possible: task_complete is one
			}
			if err != nil {
				t.Fatal(err)
			}
			fresh, err := simulator.Load(in.Name)
			if err != nil {
				t.Fatal(err)
			}
			cfg := replaytest.Config(plan, fresh)
			cfg.Approver = replaytest.ApproveAll
			var warnings []string
			cfg.OnEvent = func(ev loop.Event) {
				if ev.Type == loop.EvWarning {
					warnings = append(warnings, ev.Text)
				}
			}
			got := replay.Run(context.Background(), cfg)
			if !got.AsRecorded || got.Replayed != got.Total || !got.Run.Success {
				t.Fatalf("replay %+v\n%s", got, strings.Join(warnings, "\n"))
			}
			if st := fresh.State(); !reflect.DeepEqual(st, want) {
				t.Errorf("end state\n%+v\nwant\n%+v", st, want)
			}
		})
		replayed++
	}
	if replayed < 50 {
		t.Errorf("only %d scenarios", replayed)
	}
}

// baseRecording is a recording of a successful run of scenario base: the
// shipped one of that name, else a run of its always-right script.
func baseRecording(t *testing.T, base string) *recording.Recording {
	t.Helper()
	if slices.Contains(replaytest.ShippedNames(t), base) {
		return replaytest.Shipped(t, base)
	}
	phone, err := simulator.Load(base)
	if err != nil {
		t.Fatal(err)
	}
	rec, res, _ := replaytest.RunScript(t, phone, base)
	if !res.Success {
		t.Fatalf("the scripted run of %s failed: %s", base, res.Reason)
	}
	return rec
}

// The runs of a scenario replay on its variants on perturbed phones: to
// the end where the phone only looks different, and to a stop with the
// report where it disagrees.
func TestReplayPerturbed(t *testing.T) {
	infos, err := simulator.ListPerturbed()
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) < 8 {
		t.Fatalf("%d perturbed scenarios", len(infos))
	}
	for _, in := range infos {
		t.Run(in.Name, func(t *testing.T) {
			t.Parallel()
			phone, err := simulator.Load(in.Name)
			if err != nil {
				t.Fatal(err)
			}
			meta := phone.Meta()
			if meta.VariantOf == "" {
				t.Fatal("no variant_of")
			}
			base, err := simulator.Load(meta.VariantOf)
			if err != nil {
				t.Fatal(err)
			}
			if base.Task() != phone.Task() {
				t.Errorf("task %q, the base's %q", phone.Task(), base.Task())
			}
			plan, err := replay.FromRecording(baseRecording(t, meta.VariantOf))
			if err != nil {
				t.Fatal(err)
			}
			cfg := replaytest.Config(plan, phone)
			cfg.Approver = replaytest.ApproveAll
			var stops []loop.Event
			cfg.OnEvent = func(ev loop.Event) {
				if ev.Type == loop.EvWarning && ev.Replay != nil && ev.Replay.Stop != nil {
					stops = append(stops, ev)
				}
			}
			res := replay.Run(context.Background(), cfg)
			if meta.Replay == simulator.ReplayStop {
				if res.StoppedAt == 0 || res.AsRecorded || res.Run.Success || res.Why == "" {
					t.Fatalf("the replay did not stop: %+v", res)
				}
				if len(stops) != 1 || stops[0].Replay.Stop.Kind == "" {
					t.Fatalf("stop reports %+v; result %+v", stops, res)
				}
				t.Logf("stopped as it must:\n%s", stops[0].Text)
				return
			}
			if !res.AsRecorded || !res.Run.Success || res.Replayed != res.Total {
				for _, ev := range stops {
					t.Log(ev.Text)
				}
				t.Fatalf("result %+v", res)
			}
			if !phone.Success() {
				t.Error("the phone's check does not hold")
			}
		})
	}
}

// With a model, the agent takes over where the phone disagrees, and the
// replay resumes when the recorded screen is back; an agent that cannot
// bring it back ends the run, stopped.
func TestReplayTakeover(t *testing.T) {
	plan, err := replay.FromRecording(replaytest.Shipped(t, "wifi"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		script  string
		resumes bool
	}{
		{"replay-dialog.txt", true},
		{"wifi-wait.txt", false},
	} {
		t.Run(tc.script, func(t *testing.T) {
			phone, err := simulator.Load("wifi-dialog")
			if err != nil {
				t.Fatal(err)
			}
			cfg := replaytest.Config(plan, phone)
			b, err := script.Open(filepath.Join("..", "fixtures", "scripts", tc.script)+"?pace=0", script.Options{Now: cfg.Now, Sleep: cfg.Sleep})
			if err != nil {
				t.Fatal(err)
			}
			cfg.Agent = &loop.Config{Model: b, MaxSteps: 3, PollInterval: loop.SimulatedPollInterval}
			var resumed, agentCalls int
			var prompt string
			cfg.OnEvent = func(ev loop.Event) {
				switch {
				case ev.Type == loop.EvWarning && ev.Replay != nil && ev.Replay.Resumed:
					resumed++
				case ev.Type == loop.EvToolCall && ev.Parse != nil && ev.Parse.Format != "replay":
					agentCalls++
				case ev.Type == loop.EvPrompt && prompt == "":
					prompt = ev.Messages[len(ev.Messages)-1].Content
				}
			}
			res := replay.Run(context.Background(), cfg)
			if !strings.Contains(prompt, `open_app(name="Settings") -> done by the replay`) || !strings.Contains(prompt, "Task: Turn on Wi-Fi") {
				t.Errorf("the agent's prompt does not show the task and what was done:\n%s", prompt)
			}
			if !tc.resumes {
				if res.StoppedAt != 2 || res.Stop == nil || res.Stop.Kind != loop.StopAgent || res.AsRecorded || resumed != 0 {
					t.Fatalf("result %+v, resumed %d", res, resumed)
				}
				return
			}
			if !res.AsRecorded || res.Replayed != res.Total || res.StoppedAt != 0 || resumed != 1 || agentCalls != 1 {
				t.Fatalf("result %+v, resumed %d, agent calls %d", res, resumed, agentCalls)
			}
			if !phone.Success() {
				t.Error("Wi-Fi is not on")
			}
		})
	}
}

// The policy: sensitive calls wait for approval (and stop the replay when
// nobody can give it), step mode asks before every call, a switch already
// in the other state is not tapped, and the user may skip or stop.
func TestReplayPolicy(t *testing.T) {
	wifi, err := replay.FromRecording(replaytest.Shipped(t, "wifi"))
	if err != nil {
		t.Fatal(err)
	}
	phone, err := simulator.Load("message-send")
	if err != nil {
		t.Fatal(err)
	}
	rec, _, _ := replaytest.RunScript(t, phone, "message-send")
	send, err := replay.FromRecording(rec)
	if err != nil {
		t.Fatal(err)
	}
	verdicts := func(vs ...loop.Verdict) (loop.Approver, *[]loop.ApprovalRequest) {
		var asked []loop.ApprovalRequest
		return func(_ context.Context, req loop.ApprovalRequest) (loop.Decision, error) {
			asked = append(asked, req)
			v := loop.Approve
			if len(asked) <= len(vs) {
				v = vs[len(asked)-1]
			}
			return loop.Decision{Verdict: v}, nil
		}, &asked
	}
	t.Run("sensitive without anyone to approve", func(t *testing.T) {
		phone, _ := simulator.Load("message-send")
		res := replay.Run(context.Background(), replaytest.Config(send, phone))
		if res.Stop == nil || res.Stop.Kind != loop.StopApproval || res.StoppedAt != 4 {
			t.Fatalf("%+v", res)
		}
		if len(phone.List("sent")) != 0 {
			t.Error("the message was sent")
		}
	})
	t.Run("sensitive approved", func(t *testing.T) {
		phone, _ := simulator.Load("message-send")
		cfg := replaytest.Config(send, phone)
		var asked *[]loop.ApprovalRequest
		cfg.Approver, asked = verdicts()
		res := replay.Run(context.Background(), cfg)
		if !res.AsRecorded || len(*asked) != 1 || (*asked)[0].Why != loop.ApprovalSensitive || (*asked)[0].Label != "Send SMS" {
			t.Fatalf("%+v, asked %+v", res, *asked)
		}
	})
	t.Run("step mode", func(t *testing.T) {
		phone, _ := simulator.Load("wifi")
		cfg := replaytest.Config(wifi, phone)
		cfg.StepMode = true
		var asked *[]loop.ApprovalRequest
		cfg.Approver, asked = verdicts()
		res := replay.Run(context.Background(), cfg)
		if !res.AsRecorded || len(*asked) != len(wifi.Steps) || (*asked)[0].Why != loop.ApprovalStepMode {
			t.Fatalf("%+v, asked %d times", res, len(*asked))
		}
	})
	t.Run("skipped", func(t *testing.T) {
		phone, _ := simulator.Load("wifi")
		cfg := replaytest.Config(wifi, phone)
		cfg.StepMode = true
		cfg.Approver, _ = verdicts(loop.Approve, loop.Skip)
		cfg.MatchTimeout = time.Millisecond
		res := replay.Run(context.Background(), cfg)
		if res.AsRecorded || res.StoppedAt != 3 || res.Stop.Kind != loop.StopScreen {
			t.Fatalf("%+v", res)
		}
	})
	t.Run("aborted", func(t *testing.T) {
		phone, _ := simulator.Load("wifi")
		cfg := replaytest.Config(wifi, phone)
		cfg.StepMode = true
		cfg.Approver, _ = verdicts(loop.Approve, loop.Abort)
		res := replay.Run(context.Background(), cfg)
		if res.AsRecorded || res.StoppedAt != 2 || res.Stop.Kind != loop.StopUser || res.Replayed != 1 {
			t.Fatalf("%+v", res)
		}
	})
	t.Run("the phone stops answering", func(t *testing.T) {
		phone, _ := simulator.Load("wifi")
		cfg := replaytest.Config(wifi, phone)
		cfg.Read.DumpRetries = 1
		steps := 0
		cfg.OnEvent = func(ev loop.Event) {
			if ev.Type == loop.EvAction && ev.Outcome == loop.OutcomeDone {
				if steps++; steps == 2 {
					phone.FailNextDumps(1 << 20)
				}
			}
		}
		res := replay.Run(context.Background(), cfg)
		if res.AsRecorded || res.Stop == nil || res.Stop.Kind != loop.StopDevice || res.Replayed != 2 || res.StoppedAt != 3 || res.Why == "" {
			t.Fatalf("%+v", res)
		}
	})
	t.Run("the phone fails an action", func(t *testing.T) {
		phone, _ := simulator.Load("wifi")
		bad := *wifi
		bad.Steps = append([]replay.Step(nil), wifi.Steps...)
		bad.Steps[0].Call.Arguments = map[string]any{"name": "Nonexistent"}
		var failed bool
		cfg := replaytest.Config(&bad, phone)
		cfg.OnEvent = func(ev loop.Event) { failed = failed || ev.Type == loop.EvAction && ev.Outcome == loop.OutcomeFailed }
		res := replay.Run(context.Background(), cfg)
		if res.Stop == nil || res.Stop.Kind != loop.StopDevice || res.StoppedAt != 1 || !failed {
			t.Fatalf("%+v", res)
		}
	})
	t.Run("switch already on", func(t *testing.T) {
		phone, _ := simulator.Load("wifi")
		if res := replay.Run(context.Background(), replaytest.Config(wifi, phone)); !res.AsRecorded {
			t.Fatalf("first replay: %+v", res)
		}
		if err := phone.Key(context.Background(), "home"); err != nil {
			t.Fatal(err)
		}
		res := replay.Run(context.Background(), replaytest.Config(wifi, phone))
		if res.Stop == nil || res.Stop.Kind != loop.StopState || res.StoppedAt != 4 {
			t.Fatalf("%+v", res)
		}
		if on, _ := phone.Var("wifi"); on != "true" {
			t.Error("the replay turned Wi-Fi off again")
		}
	})
}

// FuzzFromRecording: any recording becomes a plan or an error, and a plan
// replays on a phone without failing to end.
func FuzzFromRecording(f *testing.F) {
	xml := `<hierarchy><node class="android.widget.Button" text="OK" package="p" clickable="true" bounds="[0,0][100,100]"/></hierarchy>`
	head := `{"type":"recording","version":2}` + "\n"
	f.Add([]byte(head + `{"type":"step_started","step":1,"screen":{"width":100,"height":100,"app":"p","elements":[{"index":0,"label":"OK","bounds":[0,0,100,100]}],"xml":` + strconv.Quote(xml) + `}}
{"type":"action","step":1,"call":{"name":"tap","arguments":{"index":0}},"outcome":"done","element":0}
{"type":"action","step":2,"call":{"name":"task_complete","arguments":{"summary":"ok"}},"outcome":"done"}
{"type":"finished","result":{"success":true,"reason":"task_complete"}}`))
	f.Add([]byte(head + `{"type":"step_started","step":1,"screen":{"elements":[{"index":3,"label":"x"}]}}
{"type":"action","step":1,"call":{"name":"tap","arguments":{"index":3}},"outcome":"done","target":{"label":"x","ancestors":[{"class":"a"}]}}`))
	f.Add([]byte(head + `{"type":"action","call":{"name":"type_text","arguments":{"text":"hi"}},"outcome":"done"}`))
	f.Add([]byte(head + `{"type":"action","call":{"name":"swipe","arguments":{"direction":"sideways"}},"outcome":"done"}`))
	f.Add([]byte(`{"type":"recording","version":1}` + "\n" + `{"type":"step_started","step":1,"screen":{"xml":"<hierarchy><node"}}` + "\n" + `{"type":"action","call":{"name":"tap","arguments":{"index":0}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := recording.Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		plan, err := replay.FromRecording(rec)
		if err != nil {
			return
		}
		if len(plan.Steps) == 0 {
			t.Fatal("a plan without steps")
		}
		for _, st := range plan.Steps {
			if err := action.Validate(st.Call, action.Tools); err != nil {
				t.Fatalf("the plan has an invalid call %v: %v", st.Call, err)
			}
		}
		phone, err := simulator.Load("wifi")
		if err != nil {
			t.Fatal(err)
		}
		cfg := replaytest.Config(plan, phone)
		cfg.MatchTimeout = time.Millisecond
		res := replay.Run(context.Background(), cfg)
		if res.Total != len(plan.Steps) || res.Replayed > res.Total {
			t.Fatalf("result %+v for %d steps", res, len(plan.Steps))
		}
	})
}
