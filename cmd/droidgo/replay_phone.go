package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/droidgo/droidgo/config"
	"github.com/droidgo/droidgo/internal/termsafe"
	"github.com/droidgo/droidgo/loop"
	"github.com/droidgo/droidgo/recording"
	"github.com/droidgo/droidgo/replay"
	"github.com/droidgo/droidgo/sink"
	"github.com/droidgo/droidgo/tui"
)

// phoneReplay carries out a replay plan on a phone, for `replay FILE
// --device|--sim` and `macro run`: the phone, the model that may take
// over and the approvals come from run's flags (runOptions), the events
// are shown as run shows them, and the result ends with a replay_result.
type phoneReplay struct {
	run *runOptions
	// minSimilarity and minScore are the thresholds (0: the defaults).
	minSimilarity, minScore float64
}

// addFlags adds the flags of a replay on a phone to f: the phone, the
// model that may take over, approvals, output and the thresholds.
func (p *phoneReplay) addFlags(f *pflag.FlagSet) {
	o := p.run
	f.StringVar(&o.sim, "sim", "", "replay on the simulated phone of scenario `NAME` (see 'droidgo sim list'; fixtures/perturbed has variants)")
	f.StringVarP(&o.device, "device", "s", "", "replay on the ADB device with this `SERIAL`")
	f.StringVarP(&o.model, "model", "m", "", "let this model take over where the phone disagrees with the recording: script:FILE, a GGUF file or an HF directory")
	f.StringVar(&o.endpoint, "endpoint", "", "let the model of the OpenAI-compatible server at `URL` take over where the phone disagrees")
	f.StringVar(&o.modelName, "model-name", "", "the model's `NAME` on the --endpoint server")
	f.IntVar(&o.maxSteps, "max-steps", loop.DefaultMaxSteps, "step budget of the model when it takes over")
	f.BoolVar(&o.noThink, "no-think", false, "turn the model's reasoning off")
	f.IntVar(&o.thinkBudget, "think-budget", config.DefaultThinkBudget, "reasoning tokens per step before the reasoning is closed (0: no limit)")
	o.sampling.add(f)
	f.StringVar(&o.record, "record", "", "record the replay to `FILE.jsonl` (also when it stops: the partial run)")
	f.BoolVar(&o.json, "json", false, "print one JSON event per line, and last a replay_result line")
	f.BoolVar(&o.noTUI, "no-tui", false, "print plain text even on a terminal")
	f.BoolVar(&o.step, "step", false, "step mode: every action waits for approval")
	f.StringSliceVar(&o.sensitive, "sensitive", loop.DefaultSensitive, "labels whose taps always wait for approval (comma-separated; \"\" for none)")
	f.Float64Var(&p.minSimilarity, "min-similarity", replay.DefaultMinSimilarity, "how similar (0-1) the live screen must be to the recorded one")
	f.Float64Var(&p.minScore, "min-score", replay.DefaultMinScore, "how well (0-1) a live element must match the recorded one")
	f.DurationVar(&o.poll, "poll", 0, "interval of the dumps that wait for the screen to settle (default 300ms on a phone, 10ms on a simulator)")
	_ = f.MarkHidden("poll")
}

// check refuses flag values out of range (usage errors).
func (p *phoneReplay) check() error {
	for _, t := range []struct {
		name string
		v    float64
	}{{"--min-similarity", p.minSimilarity}, {"--min-score", p.minScore}} {
		if t.v <= 0 || t.v > 1 {
			return usageErr(fmt.Errorf("%s must be above 0 and at most 1, not %v", t.name, t.v))
		}
	}
	if p.run.sim != "" && p.run.set["device"] {
		return usageErr(errors.New("--sim and --device cannot be used together"))
	}
	return nil
}

// replayResult is the last line of a replay's --json output.
type replayResult struct {
	Type      string `json:"type"`
	Replayed  int    `json:"replayed"`
	Total     int    `json:"total"`
	StoppedAt int    `json:"stopped_at,omitempty"`
	Why       string `json:"why,omitempty"`
}

// do carries out plan, named source ("replay:wifi.jsonl"), on the phone
// the flags name. It exits 0 only when every step was carried out and the
// run ended as recorded.
func (p *phoneReplay) do(plan *replay.Plan, source, note string) error {
	o := p.run
	d := o.d
	if err := p.check(); err != nil {
		return err
	}
	cfg, err := o.settings()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(d.ctx)
	defer cancel()
	dev, devName, err := d.openDevice(ctx, o.sim, cfg.Device)
	if err != nil {
		return err
	}
	defer closeDevice(dev)

	rc := replay.Config{
		Plan: plan, Device: dev, DeviceName: devName, Source: source,
		Sensitive: cfg.Sensitive, StepMode: o.step,
		MinSimilarity: p.minSimilarity, MinScore: p.minScore,
		Now: d.now, Sleep: d.sleep,
	}
	switch {
	case o.poll > 0:
		rc.Read.PollInterval = o.poll
	case o.sim != "":
		rc.Read.PollInterval = loop.SimulatedPollInterval
	}
	if s, ok := dev.(interface {
		Success() bool
		Task() string
	}); ok {
		// The simulator's check is its scenario's task's: it decides the
		// end only of a recording of that task.
		if sameTask(plan.Task, s.Task()) {
			rc.Verify = func(context.Context) error {
				if !s.Success() {
					return fmt.Errorf("the simulator's check for scenario %s (%q) does not hold", o.sim, s.Task())
				}
				return nil
			}
		} else {
			rc.Warnings = append(rc.Warnings, fmt.Sprintf("the recorded task is not scenario %s's (%q): its check is not used, the replay ends on the recorded task_complete", o.sim, s.Task()))
		}
	}
	modelName := ""
	if o.set["model"] || o.set["endpoint"] {
		backend, err := d.chooseModel(ctx, cfg)
		if err != nil {
			return err
		}
		if c, ok := backend.(io.Closer); ok {
			defer c.Close()
		}
		lc := cfg.Loop()
		lc.Model = backend
		lc.PollInterval = rc.Read.PollInterval
		rc.Agent = &lc
		modelName = backend.Name()
	}

	var sinks sink.Set
	var rec *recording.Writer
	if o.record != "" {
		var q *sink.Queue
		rec, q, err = recordTo(o.record, recording.Header{
			Created: d.clock().UTC(), Task: plan.Task, Model: source, Device: devName,
			Scripted: strings.HasPrefix(modelName, "script:"), Note: note,
		}, "")
		if err != nil {
			return err
		}
		sinks = append(sinks, q)
	}

	var res replay.Result
	_, err = d.show(ctx, view{
		json: o.json, noTUI: o.noTUI, sinks: sinks,
		ui:     tui.Options{Task: plan.Task, Device: devName, Model: source, MaxSteps: rc.StepBudget(), StepMode: o.step, EveryCall: true},
		header: "replay:   " + note,
	}, func(ctx context.Context, emit func(loop.Event), ui *tui.UI) (*loop.Result, error) {
		rc.OnEvent = emit
		switch {
		case ui != nil:
			rc.Approver, rc.Hold, rc.ConsultAlways = ui.Approve, ui.Hold, true
		case o.step:
			rc.Approver = lineApprover(d.stdin, d.stderr, false)
		}
		res = replay.Run(ctx, rc)
		return &res.Run, nil
	})
	if rec != nil {
		if cerr := rec.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}
	if err != nil {
		return err
	}
	out := replayResult{Type: "replay_result", Replayed: res.Replayed, Total: res.Total, StoppedAt: res.StoppedAt, Why: res.Why}
	if o.json {
		enc := json.NewEncoder(d.jsonOut())
		enc.SetEscapeHTML(false)
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else {
		w := termsafe.NewWriter(d.stdout) // why quotes the screen
		fmt.Fprintf(w, "replayed %d of %d steps", res.Replayed, res.Total)
		if res.StoppedAt > 0 {
			fmt.Fprintf(w, "; stopped at step %d: %s", res.StoppedAt, res.Why)
		}
		fmt.Fprintln(w)
	}
	if !res.AsRecorded || res.StoppedAt > 0 || res.Replayed != res.Total {
		return exitCode(1)
	}
	return nil
}

// replayNote says what a replay on a phone replays, for the header of
// its plain output and of its recording.
func replayNote(what string, plan *replay.Plan, when time.Time) string {
	return fmt.Sprintf("%s: %d steps of %q, replayed %s", what, len(plan.Steps), plan.Task, when.UTC().Format("2006-01-02 15:04 MST"))
}
