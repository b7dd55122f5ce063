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
	"github.com/droidgo/droidgo/model"
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
	ev.Device = r.cfg.DeviceName
	if ev.Step == 0 && ev.Type != EvRunStarted && ev.Type != EvFinished {
		ev.Step = r.step
	}
	r.cfg.OnEvent(ev)
}

// hold passes a hold point: the event that records it, then Config.Hold.
func (r *runner) hold(ctx context.Context, stage Stage) error {
	r.emit(Event{Type: EvHold, Stage: stage})
	return r.cfg.Hold(ctx, stage)
}

func (r *runner) warn(text string) {
	r.emit(Event{Type: EvWarning, Text: text})
}

func (r *runner) run(ctx context.Context) Result {
	r.start = r.cfg.Now()
	started := Event{Type: EvRunStarted, Task: r.cfg.Task, MaxSteps: r.cfg.MaxSteps, Model: modelName(r.cfg)}
	if b, ok := r.cfg.Model.(model.EngineBackend); ok {
		e := b.Engine()
		started.Engine = &e
	}
	r.emit(started)
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
	if err := r.hold(ctx, HoldTurn); err != nil {
		return false, Result{}, err
	}
	r.emit(Event{Type: EvStepStarted, Screen: r.screenInfo(ctx)})

	call, err := r.decide(ctx)
	if err != nil {
		return false, Result{}, err
	}
	if call != nil {
		if err := r.hold(ctx, HoldAction); err != nil {
			return false, Result{}, err
		}
	}
	if call == nil {
		r.record(stepOutcome{result: "no usable tool call", note: "Your last answer had no usable tool call. Answer with exactly one tool call."})
		return false, Result{}, r.failedStep("the model gave no usable tool call")
	}

	if call.Name == action.TaskComplete {
		return true, r.complete(ctx, call), nil
	}

	target, verr := r.validate(ctx, *call)
	if verr != nil {
		r.emit(Event{Type: EvAction, Call: call, Element: target.elementPtr(), Outcome: OutcomeNotRun, Detail: "not run", Error: verr.Error()})
		r.record(stepOutcome{call: call, target: target, result: fmt.Sprintf("error: %v", verr), note: fmt.Sprintf("was not run: %v.", verr), error: true})
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
	r.emit(Event{Type: EvAction, Call: call, Outcome: OutcomeDone, Detail: "task_complete"})
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
func (r *runner) act(ctx context.Context, call action.Call, target Target) error {
	before := r.screen
	done, aerr := Execute(ctx, r.cfg.Device, r.screen, call, r.cfg.Sleep)
	ev := Event{Type: EvAction, Call: &call, Element: target.elementPtr(), Outcome: OutcomeDone, Detail: done.Detail}
	if id, ok := r.screen.Identity(target.Index); ok {
		ev.Target = &id
	}
	if aerr != nil {
		ev.Outcome, ev.Error = OutcomeFailed, aerr.Error()
	}
	r.emit(ev)
	if aerr != nil {
		if ctx.Err() != nil || errors.Is(aerr, device.ErrNoDevice) {
			return fmt.Errorf("%s: %w", call.Name, aerr)
		}
		r.record(stepOutcome{call: &call, target: target, result: fmt.Sprintf("failed: %v", aerr), note: fmt.Sprintf("failed: %v.", aerr), error: true})
		return r.failedStep("actions keep failing: " + aerr.Error())
	}
	r.failed = 0

	if err := r.observe(ctx); err != nil {
		return err
	}
	if r.screen == nil {
		// observe's note says why and what the model may do.
		r.record(stepOutcome{call: &call, target: target, result: "the screen could not be read"})
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
	o := stepOutcome{call: &call, target: target, result: "screen changed"}
	if !changed {
		o.result = "screen did not change"
		o.note = "was done, but the screen did not change."
	}
	for _, f := range flips {
		o.result += ", " + f
	}
	r.record(o)

	warning, stopReason := r.prog.check(r.step, before, r.screen, call, target)
	if warning != "" {
		r.warn(warning)
		r.notes = append(r.notes, "Warning: "+warning)
	}
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

// stepOutcome is what became of one step. record tells it in one place to
// both of the model's readers: a line of the history every later prompt
// shows, and, when the model needs more than that line, a note in the
// next prompt. Both name the call and its element's label.
type stepOutcome struct {
	call   *action.Call // nil when the model gave no usable call
	target Target
	result string // the history line's end: "screen changed", "error: ..."
	// note is what the next prompt says after naming the call ("was not
	// run: ..."), or the whole note when there is no call; "" when the
	// history line says it all.
	note  string
	error bool // the note reports an error
}

func (r *runner) record(o stepOutcome) {
	subject := ""
	if o.call != nil {
		subject = o.call.String() + o.target.quoted()
	}
	line, note := o.result, o.note
	if subject != "" {
		line = subject + " -> " + line
		if note != "" {
			note = subject + " " + note
		}
	}
	r.addHistory(line)
	if note == "" {
		return
	}
	if o.error {
		note = "Error: " + note
	}
	r.notes = append(r.notes, note)
}

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
