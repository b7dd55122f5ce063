package replay

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/device"
	"github.com/droidgo/droidgo/internal/clock"
	"github.com/droidgo/droidgo/loop"
	"github.com/droidgo/droidgo/toolparse"
	"github.com/droidgo/droidgo/uixml"
)

// Defaults of Config.
const (
	// DefaultMinSimilarity is the similarity (uixml.Signature.Similarity)
	// below which a live screen is not the recorded one: another page of
	// the same app scores about 0.3 on real dumps, the same page with a
	// row more or a dialog over it 0.8 and more.
	DefaultMinSimilarity = 0.6
	// DefaultMinScore is the score (uixml.Candidate.Score) below which a
	// live element is not the recorded one: a row with the same id and
	// another title scores about 0.5, the same row moved or on another
	// screen size 0.9 and more.
	DefaultMinScore = 0.75
	// DefaultMatchTimeout bounds how long a screen that is not yet the
	// recorded one is read again (it may still be loading) before the
	// replay stops.
	DefaultMatchTimeout = 3 * time.Second
)

// Config is everything one replay needs.
type Config struct {
	Plan *Plan
	// Device is the phone; DeviceName is how it is shown.
	Device     device.Device
	DeviceName string
	// Source names what is replayed in run_started's model field, e.g.
	// "replay:wifi.jsonl".
	Source string

	// Read tunes the settled reads of the screen (loop.Settle); its
	// PollInterval is also the pause between the reads of a screen that
	// is not yet the recorded one.
	Read loop.ReadOptions
	// Sensitive lists the labels whose taps wait for approval
	// (loop.Sensitive); nil means loop.DefaultSensitive.
	Sensitive []string

	// Approver is asked before sensitive calls and, with StepMode, before
	// every call; ConsultAlways asks it before every call (a UI that can
	// turn step mode on). A nil Approver refuses sensitive calls, which
	// stops the replay.
	Approver      loop.Approver
	StepMode      bool
	ConsultAlways bool
	// Hold is called where the replay may be held, as loop.Config.Hold:
	// before each step (loop.HoldTurn) and before each call is approved and
	// carried out (loop.HoldAction).
	Hold func(ctx context.Context, stage loop.Stage) error
	// Verify is asked when the replay reaches the recorded task_complete:
	// the simulator's success check.
	Verify func(ctx context.Context) error
	// OnEvent receives every event, in order; it must not block.
	OnEvent func(loop.Event)
	// Warnings are emitted right after run_started: what the caller
	// noticed before the replay (a recording of another scenario's task).
	Warnings []string

	// Agent, when set, takes over where the phone disagrees with the
	// recording: a run of the loop with this configuration (its Model and
	// settings) on the recorded task, its history showing what the replay
	// did. The replay resumes when a recorded screen comes back.
	Agent *loop.Config

	// MinSimilarity, MinScore and MatchTimeout: 0 means the defaults.
	MinSimilarity float64
	MinScore      float64
	MatchTimeout  time.Duration

	// Now and Sleep replace the clock in tests.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
}

// Result is how a replay ended.
type Result struct {
	// Run is the run's result, as the finished event carries it.
	Run loop.Result
	// Replayed counts the plan's steps that were carried out (by the
	// replay, or by the agent when the replay resumed after them); Total
	// is the number of steps.
	Replayed, Total int
	// StoppedAt is the place (1-based) in the plan of the step the replay
	// stopped at, 0 when it did not stop; Why says why, and Stop has the
	// report.
	StoppedAt int
	Why       string
	Stop      *loop.ReplayStop
	// AsRecorded reports that every step was carried out and the run ended
	// as the recorded one did: a replay's success.
	AsRecorded bool
}

// StepBudget is the most steps a replay of c can take: the plan's, and the
// agent's when it may take over.
func (c Config) StepBudget() int {
	n := 0
	if c.Plan != nil {
		n = len(c.Plan.Steps)
	}
	if c.Agent != nil {
		if c.Agent.MaxSteps > 0 {
			n += c.Agent.MaxSteps
		} else {
			n += loop.DefaultMaxSteps
		}
	}
	return n
}

func (c *Config) setDefaults() {
	if c.MinSimilarity <= 0 {
		c.MinSimilarity = DefaultMinSimilarity
	}
	if c.MinScore <= 0 {
		c.MinScore = DefaultMinScore
	}
	if c.MatchTimeout <= 0 {
		c.MatchTimeout = DefaultMatchTimeout
	}
	if c.Read.PollInterval <= 0 {
		c.Read.PollInterval = loop.DefaultPollInterval
	}
	if c.Sensitive == nil {
		c.Sensitive = loop.DefaultSensitive
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Sleep == nil {
		c.Sleep = clock.Sleep
	}
	if c.OnEvent == nil {
		c.OnEvent = func(loop.Event) {}
	}
	if c.Hold == nil {
		c.Hold = func(context.Context, loop.Stage) error { return nil }
	}
	c.Read.Now, c.Read.Sleep = c.Now, c.Sleep
}

// runner is the state of one replay.
type runner struct {
	cfg   Config
	plan  *Plan
	start time.Time
	n     int // the step number of the events (the replay's own steps and the agent's)

	scr     *uixml.Screen // the live screen, as last read
	xml     []byte
	readDur time.Duration // the cost of reading it

	replayed  int
	history   []string // what was done, for the agent's prompt
	skipped   bool     // the user skipped a step
	takeovers int      // how often the agent took over
}

// stopped ends a replay at a step: where, why and the report.
type stopped struct {
	at   int // index in the plan
	kind loop.StopKind
	why  string
	rep  *loop.ReplayStop
}

func (s *stopped) Error() string { return s.why }

// Run carries out cfg.Plan on cfg.Device. It emits run_started, then for
// each step step_started, tool_call, action and screen_change events (and
// warnings), and finished last, also when ctx ends; the result says how
// far it got.
func Run(ctx context.Context, cfg Config) Result {
	cfg.setDefaults()
	if cfg.Plan == nil {
		cfg.Plan = &Plan{}
	}
	r := &runner{cfg: cfg, plan: cfg.Plan}
	r.start = cfg.Now()
	r.emit(loop.Event{Type: loop.EvRunStarted, Task: r.plan.Task, MaxSteps: cfg.StepBudget(), Model: cfg.Source})
	for _, w := range cfg.Warnings {
		r.warn(w)
	}
	res := r.run(ctx)
	res.Total = len(r.plan.Steps)
	res.Replayed = r.replayed
	res.Run.Steps = r.n
	res.Run.Seconds = math.Round(cfg.Now().Sub(r.start).Seconds()*1000) / 1000
	r.emit(loop.Event{Type: loop.EvFinished, Step: r.n, Result: &res.Run})
	return res
}

func (r *runner) emit(ev loop.Event) {
	ev.Time = r.cfg.Now()
	ev.Device = r.cfg.DeviceName
	if ev.Step == 0 && ev.Type != loop.EvRunStarted && ev.Type != loop.EvFinished {
		ev.Step = r.n
	}
	r.cfg.OnEvent(ev)
}

func (r *runner) warn(text string) { r.emit(loop.Event{Type: loop.EvWarning, Text: text}) }

// hold passes a hold point: the event that records it, then Config.Hold.
func (r *runner) hold(ctx context.Context, stage loop.Stage) error {
	r.emit(loop.Event{Type: loop.EvHold, Stage: stage})
	return r.cfg.Hold(ctx, stage)
}

// run carries out the steps from the first.
func (r *runner) run(ctx context.Context) Result {
	if r.cfg.Device == nil || r.plan == nil || len(r.plan.Steps) == 0 {
		return Result{Run: loop.Result{Reason: "nothing to replay or nothing to replay it on"}}
	}
	if err := r.read(ctx); err != nil {
		return r.end(ctx, err)
	}
	for i := 0; i < len(r.plan.Steps); i++ {
		done, res, err := r.step(ctx, i)
		var s *stopped
		if errors.As(err, &s) && r.cfg.Agent != nil && s.kind.Disagreement() {
			resume, res, aerr := r.takeover(ctx, s)
			if aerr != nil || res != nil {
				if aerr == nil {
					return *res
				}
				return r.end(ctx, aerr)
			}
			i = resume - 1
			continue
		}
		if err != nil {
			return r.end(ctx, err)
		}
		if done {
			return res
		}
	}
	// The recorded run ended without task_complete (a budget, a stop, a
	// kill): it ended as recorded once every step was carried out.
	res := Result{Run: loop.Result{Reason: "replayed every step; the recording ends before the run did"}, AsRecorded: !r.skipped}
	if e := r.plan.End; e != nil {
		res.Run = loop.Result{Success: e.Success, Reason: e.Reason, Summary: e.Summary}
	}
	if r.skipped {
		res.Run.Success = false
		res.Run.Reason = "replayed, but the user skipped a step"
	}
	return res
}

// end turns the error that ended a replay into its result.
func (r *runner) end(ctx context.Context, err error) Result {
	var s *stopped
	if errors.As(err, &s) {
		return Result{
			Run:       loop.Result{Reason: fmt.Sprintf("replay stopped at step %d (recorded step %d): %s", s.at+1, r.plan.Number(s.at), s.why)},
			StoppedAt: s.at + 1, Why: s.why, Stop: s.rep,
		}
	}
	// The phone could not be read or went away, or the user quit.
	reason, kind := err.Error(), loop.StopDevice
	if ctx.Err() != nil {
		reason, kind = "cancelled", loop.StopUser
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			reason = "time limit reached"
		}
	}
	return Result{Run: loop.Result{Reason: reason}, StoppedAt: r.replayed + 1, Why: reason, Stop: &loop.ReplayStop{Kind: kind}}
}

// read reads the live screen, once it has settled.
func (r *runner) read(ctx context.Context) error {
	t0 := r.cfg.Now()
	scr, xml, err := loop.Settle(ctx, r.cfg.Device, r.cfg.Read, r.warn)
	r.readDur = r.cfg.Now().Sub(t0)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("read the screen: %w", err)
	}
	r.scr, r.xml = scr, xml
	return nil
}

// step carries out step i of the plan. done reports the end of the run
// (task_complete) with res.
func (r *runner) step(ctx context.Context, i int) (done bool, res Result, err error) {
	st := r.plan.Steps[i]
	if err := r.hold(ctx, loop.HoldTurn); err != nil {
		return false, Result{}, err
	}
	r.n++
	// The step's costs: the read that ended the last step (or began the
	// replay) and what recognise added, then the checks.
	t0 := r.cfg.Now()
	read0 := r.readDur
	sim, reread, err := r.recognise(ctx, st)
	if err != nil {
		return false, Result{}, err
	}
	read := read0 + reread
	info := &loop.ReplayInfo{Step: r.plan.Number(i), Similarity: round3(sim)}
	r.emit(loop.Event{Type: loop.EvStepStarted, Screen: loop.NewScreenInfo(r.scr, r.xml)})

	// The screen must be the recorded one, except for an app launch,
	// which does the same from anywhere.
	if st.Call.Name != action.OpenApp && !st.Screen.Empty() && sim < r.cfg.MinSimilarity {
		missing, added := st.Screen.Changes(r.scr.Signature(), 5)
		return false, Result{}, r.stop(i, &stopped{kind: loop.StopScreen,
			why: fmt.Sprintf("the screen is not the recorded one (similarity %.2f, below %.2f)", sim, r.cfg.MinSimilarity),
			rep: &loop.ReplayStop{Kind: loop.StopScreen, Missing: missing, Added: added}}, info)
	}
	call, index, score, err := r.match(i, st)
	if err != nil {
		return false, Result{}, r.stop(i, err.(*stopped), info)
	}
	if index >= 0 {
		s := round3(score)
		info.Score = &s
	}
	matchDur := r.cfg.Now().Sub(t0) - reread
	r.emit(loop.Event{Type: loop.EvToolCall, Call: &call, Parse: &loop.ParseInfo{Format: "replay"}})
	if err := r.hold(ctx, loop.HoldAction); err != nil {
		return false, Result{}, err
	}
	approved, index, err := r.approve(ctx, i, call, index)
	if err != nil {
		return false, Result{}, err
	}
	if approved == nil {
		r.skipped = true
		return false, Result{}, nil
	}
	call = *approved

	info.ReadMS, info.MatchMS = ms(read), ms(max(matchDur, 0))
	if call.Name == action.TaskComplete {
		return true, r.complete(ctx, i, call, info), nil
	}
	t1 := r.cfg.Now()
	detail, aerr := "waited for the screen to settle", error(nil)
	if call.Name != action.Wait {
		// A recorded wait is a wait for the screen to settle, which
		// the read below does; everything else is the executor's.
		var done loop.Done
		done, aerr = loop.Execute(ctx, r.cfg.Device, r.scr, call, r.cfg.Sleep)
		detail = done.Detail
	}
	info.ActMS = ms(r.cfg.Now().Sub(t1))
	ev := loop.Event{Type: loop.EvAction, Call: &call, Outcome: loop.OutcomeDone, Detail: detail, Replay: info}
	if index >= 0 {
		ev.Element = &index
		if id, ok := r.scr.Identity(index); ok {
			ev.Target = &id
		}
	}
	if aerr != nil {
		ev.Outcome, ev.Error = loop.OutcomeFailed, aerr.Error()
	}
	r.emit(ev)
	if aerr != nil {
		if ctx.Err() != nil || errors.Is(aerr, device.ErrNoDevice) {
			return false, Result{}, fmt.Errorf("%s: %w", call.Name, aerr)
		}
		return false, Result{}, r.stop(i, &stopped{kind: loop.StopDevice, why: fmt.Sprintf("the phone failed %s: %v", call.String(), aerr),
			rep: &loop.ReplayStop{Kind: loop.StopDevice}}, nil)
	}
	r.replayed++
	r.history = append(r.history, fmt.Sprintf("%s%s -> done by the replay of a recorded run", call.String(), quotedLabel(r.scr, index)))
	before := r.scr
	if err := r.read(ctx); err != nil {
		return false, Result{}, err
	}
	changed := before.Fingerprint() != r.scr.Fingerprint()
	r.emit(loop.Event{Type: loop.EvScreenChange, Changed: &changed})
	return false, Result{}, nil
}

// recognise makes sure the live screen is the recorded one where it can:
// it closes the notification shade left over the app (Back, as a person
// would), and reads again while the screen is not yet the recorded one,
// for at most MatchTimeout (it may still be loading). It returns the
// similarity of the screen it ends with and the time it took to get there
// (none when the screen was the recorded one at once).
func (r *runner) recognise(ctx context.Context, st Step) (sim float64, reread time.Duration, err error) {
	if st.Screen.Empty() {
		return 1, 0, nil
	}
	sim = st.Screen.Similarity(r.scr.Signature())
	if sim >= r.cfg.MinSimilarity || st.Call.Name == action.OpenApp && !r.scr.Signature().SystemUI() {
		return sim, 0, nil
	}
	t0 := r.cfg.Now()
	if r.scr.Signature().SystemUI() && !st.Screen.SystemUI() {
		r.warn("the notification shade or quick settings cover the app: pressing Back to close them")
		if _, err := loop.Execute(ctx, r.cfg.Device, r.scr, action.Call{Name: action.PressKey, Arguments: map[string]any{"key": "back"}}, r.cfg.Sleep); err != nil {
			return sim, 0, fmt.Errorf("close the notification shade: %w", err)
		}
		if err := r.read(ctx); err != nil {
			return sim, 0, err
		}
		sim = st.Screen.Similarity(r.scr.Signature())
	}
	deadline := r.cfg.Now().Add(r.cfg.MatchTimeout)
	for sim < r.cfg.MinSimilarity && st.Call.Name != action.OpenApp && r.cfg.Now().Before(deadline) {
		if err := r.cfg.Sleep(ctx, r.cfg.Read.PollInterval); err != nil {
			return sim, 0, err
		}
		if err := r.read(ctx); err != nil {
			return sim, 0, err
		}
		sim = st.Screen.Similarity(r.scr.Signature())
	}
	return sim, r.cfg.Now().Sub(t0), nil
}

// match finds the step's element on the live screen and returns the call
// with its index, the element's index (-1 for none) and its score.
func (r *runner) match(i int, st Step) (action.Call, int, float64, error) {
	call := st.Call
	call.Arguments = cloneArgs(st.Call.Arguments)
	if st.Focus != nil && call.Name == action.TypeText {
		if err := r.checkFocus(i, *st.Focus); err != nil {
			return call, -1, 0, err
		}
	}
	if st.Target == nil {
		return call, -1, 0, nil
	}
	cands := r.scr.Match(*st.Target)
	top := cands[:min(3, len(cands))]
	rep := &loop.ReplayStop{Recorded: st.Target, Candidates: top}
	if len(cands) == 0 || cands[0].Score < r.cfg.MinScore {
		rep.Kind = loop.StopTarget
		why := "the recorded element " + describe(*st.Target) + " is not on the screen"
		if len(cands) > 0 {
			why += fmt.Sprintf(" (the best candidate, %q, scores %.2f, below %.2f)", cands[0].Label, cands[0].Score, r.cfg.MinScore)
		}
		return call, -1, 0, &stopped{at: i, kind: loop.StopTarget, why: why, rep: rep}
	}
	best := cands[0]
	el := r.scr.Elements[best.Element]
	for _, d := range best.Diffs {
		if d.Field == uixml.FieldChecked && (call.Name == action.Tap || call.Name == action.LongPress) {
			rep.Kind = loop.StopState
			return call, -1, 0, &stopped{at: i, kind: loop.StopState, rep: rep,
				why: fmt.Sprintf("%q is %s, it was %s when the recorded run tapped it", el.Label, d.Live, d.Recorded)}
		}
	}
	if call.Name != action.Swipe && !r.scr.Reaches(el.X, el.Y, el.Node, call.Name == action.LongPress) {
		rep.Kind = loop.StopCovered
		what := "something else"
		if t := r.scr.TouchTarget(el.X, el.Y, call.Name == action.LongPress); t >= 0 {
			what = nodeName(r.scr, t)
		}
		return call, -1, 0, &stopped{at: i, kind: loop.StopCovered, rep: rep,
			why: fmt.Sprintf("%q is on the screen, but a tap on it would reach %s drawn over it", el.Label, what)}
	}
	call.Arguments["index"] = int64(best.Element)
	return call, best.Element, best.Score, nil
}

// checkFocus makes sure the field the recorded text went to has the focus.
func (r *runner) checkFocus(i int, focus uixml.Identity) error {
	for _, c := range r.scr.Match(focus) {
		if c.Score < r.cfg.MinScore {
			break
		}
		e := r.scr.Elements[c.Element]
		if r.scr.Nodes[e.Node].Focused {
			return nil
		}
	}
	cands := r.scr.Match(focus)
	return &stopped{at: i, kind: loop.StopFocus,
		why: "the text went to " + describe(focus) + ", which does not have the focus",
		rep: &loop.ReplayStop{Kind: loop.StopFocus, Recorded: &focus, Candidates: cands[:min(3, len(cands))]}}
}

// approve applies step mode and the sensitive-action policy, as the loop
// does. A nil call with a nil error is a step the user skipped.
func (r *runner) approve(ctx context.Context, i int, call action.Call, index int) (*action.Call, int, error) {
	t, _ := loop.TargetOf(r.scr, call)
	reason := loop.Sensitive(call, r.scr, t, r.cfg.Sensitive)
	var why loop.ApprovalReason
	switch {
	case reason != "":
		why = loop.ApprovalSensitive
	case r.cfg.StepMode:
		why, reason = loop.ApprovalStepMode, "step mode"
	}
	if why == "" && !(r.cfg.ConsultAlways && r.cfg.Approver != nil) {
		return &call, index, nil
	}
	elem := func(idx int) *int {
		if idx < 0 {
			return nil
		}
		return &idx
	}
	if why == loop.ApprovalSensitive && r.cfg.Approver == nil {
		r.emit(loop.Event{Type: loop.EvAction, Call: &call, Element: elem(index), Outcome: loop.OutcomeRefused, Detail: "not run", Error: "needs approval: " + reason})
		return nil, index, &stopped{at: i, kind: loop.StopApproval, why: fmt.Sprintf("%s needs approval (%s) and nobody can give it", call.String(), reason),
			rep: &loop.ReplayStop{Kind: loop.StopApproval}}
	}
	if r.cfg.Approver == nil {
		return &call, index, nil
	}
	if why != "" {
		r.emit(loop.Event{Type: loop.EvApproval, Call: &call, Element: elem(index), Approval: why, Text: reason})
	}
	d, err := r.cfg.Approver(ctx, loop.ApprovalRequest{Step: r.n, Call: call, Label: t.Element.Label, Why: why, Reason: reason})
	if err != nil {
		if ctx.Err() != nil {
			return nil, index, ctx.Err()
		}
		return nil, index, fmt.Errorf("approval: %w", err)
	}
	switch d.Verdict {
	case loop.Approve:
		return &call, index, nil
	case loop.Skip:
		r.emit(loop.Event{Type: loop.EvAction, Call: &call, Element: elem(index), Outcome: loop.OutcomeSkipped, Detail: "skipped by the user"})
		r.warn(fmt.Sprintf("step %d (%s) was skipped: the rest of the replay may not find its screens", r.n, call.String()))
		return nil, index, nil
	case loop.Edit:
		edited, _, err := toolparse.Coerce(d.Call, nil)
		if err == nil {
			err = action.Validate(edited, action.Tools)
		}
		nt := loop.NoTarget
		if err == nil {
			nt, err = loop.TargetOf(r.scr, edited)
		}
		if err != nil {
			r.emit(loop.Event{Type: loop.EvAction, Call: &edited, Outcome: loop.OutcomeNotRun, Detail: "not run", Error: err.Error()})
			return nil, index, &stopped{at: i, kind: loop.StopUser, why: fmt.Sprintf("the user's edit of %s is invalid: %v", call.String(), err),
				rep: &loop.ReplayStop{Kind: loop.StopUser}}
		}
		r.warn(fmt.Sprintf("the user changed %s to %s", call.String(), edited.String()))
		return &edited, nt.Index, nil
	case loop.Abort:
		return nil, index, &stopped{at: i, kind: loop.StopUser, why: "stopped by the user", rep: &loop.ReplayStop{Kind: loop.StopUser}}
	}
	return nil, index, fmt.Errorf("approval: unknown verdict %d", d.Verdict)
}

// complete ends the replay at the recorded task_complete: the recorded
// summary, and the simulator's check where there is one.
func (r *runner) complete(ctx context.Context, i int, call action.Call, info *loop.ReplayInfo) Result {
	r.emit(loop.Event{Type: loop.EvAction, Call: &call, Outcome: loop.OutcomeDone, Detail: "task_complete", Replay: info})
	r.replayed++
	summary, _ := call.Arguments["summary"].(string)
	res := Result{Run: loop.Result{Success: true, Reason: "task_complete", Summary: summary}, AsRecorded: !r.skipped}
	if e := r.plan.End; e != nil && !e.Success {
		// The recorded run called task_complete and its check failed:
		// ending the same way is ending as recorded.
		res.Run = loop.Result{Reason: e.Reason, Summary: summary}
	}
	if r.cfg.Verify != nil {
		err := r.cfg.Verify(ctx)
		if (err == nil) != res.Run.Success {
			why := "the success check holds, but it did not in the recorded run"
			if err != nil {
				why = "task_complete, but the check failed: " + err.Error()
			}
			res.AsRecorded = false
			res.Run = loop.Result{Success: err == nil, Reason: why, Summary: summary}
			res.StoppedAt, res.Why, res.Stop = i+1, why, &loop.ReplayStop{Kind: loop.StopCheck}
		}
	}
	if r.skipped {
		res.Run.Success = false
		res.Run.Reason = "task_complete, but the user skipped a step"
	}
	return res
}

// stop reports a step the replay cannot carry out: a warning with the
// report a person can act on.
func (r *runner) stop(i int, s *stopped, info *loop.ReplayInfo) error {
	s.at = i
	if info == nil {
		info = &loop.ReplayInfo{Step: r.plan.Number(i)}
	}
	ri := *info
	ri.Stop = s.rep
	r.emit(loop.Event{Type: loop.EvWarning, Text: Report(r.plan, i, s.why, s.rep), Replay: &ri})
	return s
}

func cloneArgs(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

// quotedLabel is ` "Label"` of element index of s, for history lines.
func quotedLabel(s *uixml.Screen, index int) string {
	if e, _, ok := s.ElementByIndex(index); ok && e.Label != "" {
		return fmt.Sprintf(" %q", e.Label)
	}
	return ""
}

// nodeName names node i of s for a report: its text, description or
// label, else the texts inside it (a dialog's title), and its class.
func nodeName(s *uixml.Screen, i int) string {
	n := s.Nodes[i]
	class := n.Class
	if k := strings.LastIndexByte(class, '.'); k >= 0 {
		class = class[k+1:]
	}
	texts := s.Texts(i)
	if len(texts) == 0 && n.Index >= 0 {
		texts = []string{s.Elements[n.Index].Label}
	}
	if len(texts) == 0 || texts[0] == "" {
		return "a " + class
	}
	return fmt.Sprintf("a %s showing %q", class, texts[0])
}
