package eval

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/droidgo/droidgo/loop"
	"github.com/droidgo/droidgo/recording"
	"github.com/droidgo/droidgo/replay"
	"github.com/droidgo/droidgo/simulator"
)

// ReplayFunc gives the plan a task's phone replays in an evaluation of
// replays (Options.Replays) instead of running the agent: the recorded run
// of the scenario the task varies (Meta.VariantOf) or of the task itself.
type ReplayFunc func(t *Task) (*replay.Plan, error)

// Replays finds the recordings of an evaluation of replays in dir: NAME.jsonl
// (a recording of scenario NAME's task, e.g. fixtures/recordings), or the
// first repeat of an `eval --out dir` run, runs/tasks/NAME-r1.jsonl. Only a
// run that succeeded is replayed.
func Replays(dir string) ReplayFunc {
	return func(t *Task) (*replay.Plan, error) {
		name := t.Name
		if t.Meta.VariantOf != "" {
			name = t.Meta.VariantOf
		}
		var rec *recording.Recording
		var err error
		for _, p := range []string{filepath.Join(dir, name+".jsonl"), filepath.Join(dir, "runs", BuiltinTasks, name+"-r1.jsonl")} {
			if rec, err = recording.Open(p); !errors.Is(err, fs.ErrNotExist) {
				break
			}
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("no recording of %s in %s (%s.jsonl, or runs/tasks/%s-r1.jsonl of an eval --out directory)", name, dir, name, name)
		}
		if err != nil {
			return nil, err
		}
		p, err := replay.FromRecording(rec)
		if err != nil {
			return nil, fmt.Errorf("the recording of %s: %w", name, err)
		}
		if !p.Succeeded() {
			return nil, fmt.Errorf("the recorded run of %s did not succeed: there is nothing to do again", name)
		}
		return p, nil
	}
}

// runReplayTask replays the task's plan on a fresh phone, as droidgo
// replay --sim does, with sensitive calls approved as in a benchmark run,
// and judges it by what the phone demands (judgeReplay).
func runReplayTask(ctx context.Context, o Options, j job, r *TaskResult) {
	err := guard(func() error {
		plan, err := o.Replays(j.task)
		if err != nil {
			return err
		}
		phone, err := j.task.Open()
		if err != nil {
			return err
		}
		cfg := replay.Config{
			Plan: plan, Device: phone, DeviceName: "sim:" + j.task.Name, Source: "replay",
			Sensitive: o.Loop.Sensitive,
			Approver: func(context.Context, loop.ApprovalRequest) (loop.Decision, error) {
				return loop.Decision{Verdict: loop.Approve}, nil
			},
			Verify: func(context.Context) error {
				if !phone.Success() {
					return errors.New("the simulated phone is not in the state the task asks for")
				}
				return nil
			},
			Read: loop.ReadOptions{PollInterval: o.Loop.PollInterval},
			Now:  o.Now, Sleep: o.Sleep,
		}
		if cfg.Read.PollInterval <= 0 {
			cfg.Read.PollInterval = loop.SimulatedPollInterval
		}
		consumers, finish, err := o.recordRun(j, recording.Header{Task: plan.Task, Model: "replay", Device: cfg.DeviceName,
			Note: "droidgo eval replay of " + j.suite + "/" + j.task.Name}, r)
		if err != nil {
			return err
		}
		defer finish(ctx)
		cfg.OnEvent = consumers.Event
		res := replay.Run(ctx, cfg)
		if err := finish(ctx); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("stopped after %d steps: %w", res.Run.Steps, ctx.Err())
		}
		r.Steps, r.Seconds, r.Summary = res.Run.Steps, res.Run.Seconds, res.Run.Summary
		r.Success, r.Reason = judgeReplay(j.task, res)
		return nil
	})
	if err != nil {
		r.NotRun, r.Success, r.Reason = true, false, err.Error()
	}
}

// judgeReplay decides a replay: on a phone where it must stop (Meta.Replay
// "stop"), a success is a stop because the phone disagrees with the
// recording; elsewhere, every step carried out and the run ended as
// recorded (the phone's check holding).
func judgeReplay(t *Task, res replay.Result) (bool, string) {
	if t.Meta.Replay == simulator.ReplayStop {
		switch {
		case res.StoppedAt > 0 && res.Stop != nil && res.Stop.Kind.Disagreement():
			return true, "stopped as it must: " + res.Why
		case res.StoppedAt > 0:
			return false, "stopped, but not because the phone disagrees with the recording: " + res.Why
		}
		return false, "the replay did not stop where the phone disagrees with the recording: " + res.Run.Reason
	}
	if res.AsRecorded && res.Replayed == res.Total {
		return true, res.Run.Reason
	}
	return false, res.Run.Reason
}
