package loop

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/device"
	"github.com/droidgo/droidgo/uixml"
)

// Run carries out cfg.Task and reports how it ended. It always returns a
// Result and always emits EvFinished last, also when ctx is cancelled.
func Run(ctx context.Context, cfg Config) Result {
	cfg.setDefaults()
	r := &runner{cfg: cfg, prog: newProgress()}
	for _, line := range cfg.Previous {
		r.before++
		r.addHistory(line)
	}
	return r.run(ctx)
}

// runner is the state of one run.
type runner struct {
	cfg   Config
	start time.Time
	step  int

	screen  *uixml.Screen // the current screen, nil when it could not be read
	dumpErr error         // why screen is nil
	xml     []byte        // raw dump of screen

	history []string // one line per past step
	notes   []string // what the next prompt must tell the model about the last step
	prog    *progress

	failed int // steps in a row that ended without an executed action
	before int // steps taken before this run (Config.Previous)
}

// stopErr ends a run with a reason.
type stopErr struct {
	reason string
}

func (e *stopErr) Error() string { return e.reason }

func stop(format string, args ...any) error { return &stopErr{reason: fmt.Sprintf(format, args...)} }

func (r *runner) emit(ev Event) {
	ev.Time = r.cfg.Now()
	if ev.Step == 0 && ev.Type != EvRunStarted && ev.Type != EvFinished {
		ev.Step = r.step
	}
	r.cfg.OnEvent(ev)
}

func (r *runner) warn(text string) {
	r.emit(Event{Type: EvWarning, Text: text})
}

func (r *runner) run(ctx context.Context) Result {
	r.start = r.cfg.Now()
	r.emit(Event{Type: EvRunStarted, Task: r.cfg.Task, MaxSteps: r.cfg.MaxSteps,
		Device: r.cfg.DeviceName, Model: modelName(r.cfg)})
	for _, w := range r.cfg.Warnings {
		r.warn(w)
	}

	res := r.steps(ctx)
	res.Steps = r.step
	res.Seconds = math.Round(r.cfg.Now().Sub(r.start).Seconds()*1000) / 1000
	r.emit(Event{Type: EvFinished, Step: r.step, Result: &res})
	return res
}

func modelName(cfg Config) string {
	if cfg.Model == nil {
		return ""
	}
	return cfg.Model.Name()
}

// steps runs steps until one of them ends the run.
func (r *runner) steps(ctx context.Context) Result {
	if r.cfg.Device == nil || r.cfg.Model == nil {
		return Result{Reason: "no device or no model configured"}
	}
	if err := r.observe(ctx); err != nil {
		return r.endWith(ctx, err)
	}
	for {
		if ctx.Err() != nil {
			return r.endWith(ctx, ctx.Err())
		}
		if r.step >= r.cfg.MaxSteps {
			return Result{Reason: fmt.Sprintf("step budget exhausted: %s without task_complete", Steps(r.cfg.MaxSteps))}
		}
		r.step++
		done, res, err := r.oneStep(ctx)
		if err != nil {
			return r.endWith(ctx, err)
		}
		if done {
			return res
		}
	}
}

// endWith turns the error that stopped a run into its Result.
func (r *runner) endWith(ctx context.Context, err error) Result {
	var se *stopErr
	switch {
	case errors.As(err, &se):
		return Result{Reason: se.reason}
	case ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ctx.Err())):
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return Result{Reason: "time limit reached"}
		}
		return Result{Reason: "cancelled"}
	default:
		return Result{Reason: err.Error()}
	}
}

// oneStep runs step r.step. done reports that the run is over with res.
func (r *runner) oneStep(ctx context.Context) (done bool, res Result, err error) {
	if err := r.cfg.Hold(ctx, HoldTurn); err != nil {
		return false, Result{}, err
	}
	r.emit(Event{Type: EvStepStarted, Screen: r.screenInfo(ctx)})

	call, err := r.decide(ctx)
	if err != nil {
		return false, Result{}, err
	}
	if call != nil {
		if err := r.cfg.Hold(ctx, HoldAction); err != nil {
			return false, Result{}, err
		}
	}
	if call == nil {
		r.addHistory("no usable tool call")
		r.notes = append(r.notes, "Your last answer had no usable tool call. Answer with exactly one tool call.")
		return false, Result{}, r.failedStep("the model gave no usable tool call")
	}

	if call.Name == action.TaskComplete {
		return true, r.complete(ctx, call), nil
	}

	target, verr := r.validate(ctx, *call)
	if verr != nil {
		r.emit(Event{Type: EvAction, Call: call, Element: target.elementPtr(), Detail: "not run", Error: verr.Error()})
		r.notes = append(r.notes, fmt.Sprintf("Error: %s was not run: %v.", call.String(), verr))
		r.addHistory(fmt.Sprintf("%s -> error: %v", call.String(), verr))
		return false, Result{}, r.failedStep("")
	}

	call, target, err = r.approve(ctx, *call, target)
	if err != nil || call == nil {
		return false, Result{}, err
	}
	if call.Name == action.TaskComplete { // the user edited the call into it
		return true, r.complete(ctx, call), nil
	}

	return false, Result{}, r.act(ctx, *call, target)
}

// complete ends the run on task_complete, checked by cfg.Verify.
func (r *runner) complete(ctx context.Context, call *action.Call) Result {
	summary, _ := call.Arguments["summary"].(string)
	r.emit(Event{Type: EvAction, Call: call, Detail: "task_complete"})
	res := Result{Success: true, Reason: "task_complete", Summary: summary}
	if r.cfg.Verify != nil {
		if err := r.cfg.Verify(ctx); err != nil {
			res.Success = false
			res.Reason = "task_complete, but the check failed: " + err.Error()
		}
	}
	return res
}

// failedStep counts a step that did not act; too many in a row end the run.
func (r *runner) failedStep(why string) error {
	r.failed++
	if r.failed >= maxFailedSteps {
		if why == "" {
			why = "no action could be run"
		}
		return stop("%d failed steps in a row: %s", r.failed, why)
	}
	return nil
}

// act executes call, waits for the screen to settle and checks progress.
func (r *runner) act(ctx context.Context, call action.Call, target target) error {
	before := r.screen
	detail, aerr := r.execute(ctx, call, target)
	ev := Event{Type: EvAction, Call: &call, Element: target.elementPtr(), Detail: detail}
	if aerr != nil {
		ev.Error = aerr.Error()
	}
	r.emit(ev)
	if aerr != nil {
		if ctx.Err() != nil || errors.Is(aerr, device.ErrNoDevice) {
			return fmt.Errorf("%s: %w", call.Name, aerr)
		}
		r.notes = append(r.notes, fmt.Sprintf("Error: %s failed: %v.", call.String(), aerr))
		r.addHistory(fmt.Sprintf("%s%s -> failed: %v", call.String(), target.quoted(), aerr))
		return r.failedStep("actions keep failing: " + aerr.Error())
	}
	r.failed = 0

	if err := r.observe(ctx); err != nil {
		return err
	}
	if r.screen == nil {
		r.addHistory(fmt.Sprintf("%s%s -> the screen could not be read", call.String(), target.quoted()))
		return nil
	}
	changed := before == nil || before.Fingerprint() != r.screen.Fingerprint()
	var flips []string
	if before != nil {
		for _, t := range toggled(before, r.screen) {
			flips = append(flips, fmt.Sprintf("%q turned %s", t.label, onOff(t.on)))
		}
	}
	r.emit(Event{Type: EvScreenChange, Changed: &changed, Detail: strings.Join(flips, ", ")})
	effect := "screen changed"
	if !changed {
		effect = "screen did not change"
		r.notes = append(r.notes, fmt.Sprintf("%s%s was done, but the screen did not change.", call.String(), target.quoted()))
	}
	for _, f := range flips {
		effect += ", " + f
	}

	warning, stopReason := r.prog.check(r.step, before, r.screen, call, target)
	if warning != "" {
		r.warn(warning)
		r.notes = append(r.notes, "Warning: "+warning)
	}
	r.addHistory(fmt.Sprintf("%s%s -> %s", call.String(), target.quoted(), effect))
	if stopReason != "" {
		return stop("%s", stopReason)
	}
	return nil
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// maxHistoryLine bounds one history line: a model that typed a page of
// garbage must not make every later prompt a page longer.
const maxHistoryLine = 240

func (r *runner) addHistory(line string) {
	if rs := []rune(line); len(rs) > maxHistoryLine {
		line = string(rs[:maxHistoryLine-1]) + "…"
	}
	r.history = append(r.history, fmt.Sprintf("step %d: %s", r.before+r.step, line))
}

// Steps says n steps in English: "1 step", "5 steps". Every printer of
// a run's length uses it.
func Steps(n int) string {
	if n == 1 {
		return "1 step"
	}
	return fmt.Sprintf("%d steps", n)
}
