package eval

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/loop"
	"github.com/droidgo/droidgo/model"
	"github.com/droidgo/droidgo/model/script"
	"github.com/droidgo/droidgo/recording"
	"github.com/droidgo/droidgo/report"
	"github.com/droidgo/droidgo/sink"
	"github.com/droidgo/droidgo/uixml"
)

// ModelFunc gives the backend for one run: kind is "task" or "decision",
// suite and name say which. A shared backend is returned for every run;
// a scripted one is opened fresh, as a script plays from its first turn.
// release is called when the run is over (nil: nothing to do).
type ModelFunc func(ctx context.Context, kind, suite, name string) (b model.Backend, release func(), err error)

// Options configure an evaluation.
type Options struct {
	Model ModelFunc
	// Replays, when set, makes the evaluation one of replays: each task's
	// phone replays the plan Replays gives it (a recorded run) instead of
	// running the agent, and is judged by judgeReplay. Decision cases are
	// not run.
	Replays ReplayFunc
	// ModelName is the model as results.json names it.
	ModelName string
	// Parallel is how many runs go at once (simulated phones); <1 means 1.
	Parallel int
	// Repeat runs every task and case this many times; <1 means 1.
	Repeat int
	// Loop is the loop configuration every run starts from
	// (config.Settings.Loop: the step budget, thinking and its budget,
	// the constraint, the sensitive labels, the sampling). Each run sets
	// its own task, phone, model, event consumer and seed (Seed: from
	// Loop.Sampling.Seed, the run's suite, name and repeat); the clock is
	// Now and Sleep, and a zero PollInterval is
	// loop.SimulatedPollInterval.
	Loop loop.Config
	// Filter keeps the tasks and cases whose "suite/name" it matches.
	Filter *regexp.Regexp
	// Out is where recordings go (Out/runs/SUITE/NAME-rK.jsonl); "" keeps
	// none.
	Out string
	// Progress is told of every finished run (from one goroutine at a time).
	Progress func(Progress)
	// Config is copied into Results.Config, with what Run knows filled in:
	// Parallel, Repeat, and the step budget, thinking and sampling of
	// Loop.
	Config Config
	// Now and Sleep replace the clock in tests.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
}

// Progress is the state of an evaluation after one more run.
type Progress struct {
	Done, Total int
	// Succeeded counts successful task runs and fully correct decisions;
	// Scored the runs that count (not-run ones do not).
	Succeeded, Scored int
	Elapsed           time.Duration
	// Last is the run that just finished, e.g. "tasks/wifi: success".
	Last string
}

// Rate is the running success rate (0 before anything scored).
func (p Progress) Rate() float64 {
	if p.Scored == 0 {
		return 0
	}
	return float64(p.Succeeded) / float64(p.Scored)
}

// ETA estimates the time left from the pace so far.
func (p Progress) ETA() time.Duration {
	if p.Done == 0 {
		return 0
	}
	return time.Duration(float64(p.Elapsed) / float64(p.Done) * float64(p.Total-p.Done))
}

// job is one run: a task run or a decision.
type job struct {
	task   *Task
	cas    *Case
	broken *Broken
	suite  string
	repeat int
	slot   int // index in Results.Tasks or Results.Decisions
}

// isTask tells whether j's result goes to Results.Tasks.
func (j job) isTask() bool { return j.task != nil || j.broken != nil && !j.broken.Decision }

// Run evaluates suites and returns the results. When ctx ends it stops,
// and returns the results so far (the rest not run) with ctx's error;
// every other problem is in the results.
func Run(ctx context.Context, suites []*Suite, o Options) (*Results, error) {
	if o.Model == nil && o.Replays == nil {
		return nil, errors.New("eval: no model")
	}
	o.Parallel = max(o.Parallel, 1)
	o.Repeat = max(o.Repeat, 1)
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Loop.PollInterval <= 0 {
		o.Loop.PollInterval = loop.SimulatedPollInterval
	}
	if o.Loop.MaxSteps <= 0 {
		o.Loop.MaxSteps = loop.DefaultMaxSteps
	}
	cfg := o.Config
	cfg.Parallel, cfg.Repeat = o.Parallel, o.Repeat
	cfg.MaxSteps, cfg.Think, cfg.ThinkBudget = o.Loop.MaxSteps, o.Loop.Think, o.Loop.ThinkBudget
	cfg.Temperature, cfg.TopP, cfg.Seed = o.Loop.Sampling.Temperature, o.Loop.Sampling.TopP, o.Loop.Sampling.Seed
	res := &Results{Model: o.ModelName, Config: cfg, Tasks: []TaskResult{}, Decisions: []DecisionResult{}}
	var jobs []job
	keep := func(suite, name string) bool { return o.Filter == nil || o.Filter.MatchString(suite+"/"+name) }
	for _, s := range suites {
		for _, t := range s.Tasks {
			if !keep(s.Name, t.Name) {
				continue
			}
			for k := 1; k <= o.Repeat; k++ {
				jobs = append(jobs, job{task: t, suite: s.Name, repeat: k, slot: len(res.Tasks)})
				res.Tasks = append(res.Tasks, TaskResult{Suite: s.Name, Name: t.Name, Repeat: k, Task: t.Text,
					App: t.Meta.App, Difficulty: t.Meta.Difficulty, HumanSteps: t.Meta.HumanSteps})
			}
		}
		for _, c := range s.Cases {
			if !keep(s.Name, c.Name) {
				continue
			}
			for k := 1; k <= o.Repeat; k++ {
				jobs = append(jobs, job{cas: c, suite: s.Name, repeat: k, slot: len(res.Decisions)})
				res.Decisions = append(res.Decisions, DecisionResult{Suite: s.Name, Name: c.Name, Repeat: k, Task: c.Task})
			}
		}
		for i := range s.Broken {
			b := &s.Broken[i]
			if !keep(s.Name, b.Name) {
				continue
			}
			// A broken entry is reported once, not once per repeat.
			if b.Decision {
				jobs = append(jobs, job{broken: b, suite: s.Name, repeat: 1, slot: len(res.Decisions)})
				res.Decisions = append(res.Decisions, DecisionResult{Suite: s.Name, Name: b.Name, Repeat: 1})
			} else {
				jobs = append(jobs, job{broken: b, suite: s.Name, repeat: 1, slot: len(res.Tasks)})
				res.Tasks = append(res.Tasks, TaskResult{Suite: s.Name, Name: b.Name, Repeat: 1})
			}
		}
	}

	start := o.Now()
	var mu sync.Mutex
	prog := Progress{Total: len(jobs)}
	finished := func(last string, scored, ok bool) {
		mu.Lock()
		defer mu.Unlock()
		prog.Done++
		if scored {
			prog.Scored++
			if ok {
				prog.Succeeded++
			}
		}
		prog.Elapsed = o.Now().Sub(start)
		prog.Last = last
		if o.Progress != nil {
			o.Progress(prog)
		}
	}

	work := make(chan job)
	var wg sync.WaitGroup
	for range min(o.Parallel, max(len(jobs), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				if j.isTask() {
					r := &res.Tasks[j.slot]
					if j.broken != nil {
						r.NotRun, r.Reason = true, j.broken.Reason
					} else if o.Replays != nil {
						runReplayTask(ctx, o, j, r)
					} else {
						runTask(ctx, o, j, r)
					}
					finished(fmt.Sprintf("%s/%s: %s", r.Suite, r.Name, taskVerdict(r)), !r.NotRun, r.Success)
					continue
				}
				r := &res.Decisions[j.slot]
				switch {
				case j.broken != nil:
					r.NotRun, r.Reason = true, j.broken.Reason
				case o.Replays != nil:
					r.NotRun, r.Reason = true, "a decision case has no recorded run to replay"
				default:
					runDecision(ctx, o, j, r)
				}
				finished(fmt.Sprintf("%s/%s: %s", r.Suite, r.Name, decisionVerdict(r)), !r.NotRun, r.ActionCorrect)
			}
		}()
	}
	fed := 0
feed:
	for _, j := range jobs {
		select {
		case work <- j:
			fed++
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	// Runs never started are reported, so a stopped evaluation still
	// says what it did.
	for _, j := range jobs[fed:] {
		if j.isTask() {
			r := &res.Tasks[j.slot]
			r.NotRun, r.Reason = true, "the evaluation was stopped before it ran"
		} else {
			r := &res.Decisions[j.slot]
			r.NotRun, r.Reason = true, "the evaluation was stopped before it ran"
		}
	}
	res.Summary = Summarize(res)
	if ctx.Err() != nil {
		return res, fmt.Errorf("eval stopped: %w", ctx.Err())
	}
	return res, nil
}

func taskVerdict(r *TaskResult) string {
	switch {
	case r.NotRun:
		return "not run: " + r.Reason
	case r.Success:
		return "success"
	}
	return "failure: " + r.Reason
}

func decisionVerdict(r *DecisionResult) string {
	switch {
	case r.NotRun:
		return "not run: " + r.Reason
	case r.ActionCorrect:
		return "correct"
	case r.ToolCorrect:
		return "right tool, wrong action"
	}
	return "wrong tool"
}

// guard runs f and turns a panic into an error, so one broken run is
// reported instead of ending the benchmark.
func guard(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error: %v\n%s", p, debug.Stack())
		}
	}()
	return f()
}

// failures records whether a backend failed (an error other than the end of
// its stream or a cancelled context): a crashing backend makes a run "not
// run", not a model failure.
type failures struct {
	model.Backend
	mu  sync.Mutex
	err error
}

func (f *failures) note(err error) {
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return
	}
	if errors.Is(err, script.ErrMisfit) {
		// A script that ran out of turns or names an element the screen
		// lacks is a model that went wrong, which the run's result shows.
		return
	}
	f.mu.Lock()
	if f.err == nil {
		f.err = err
	}
	f.mu.Unlock()
}

func (f *failures) Chat(ctx context.Context, req model.ChatRequest) (model.Stream, error) {
	st, err := f.Backend.Chat(ctx, req)
	if err != nil {
		f.note(err)
		return nil, err
	}
	return &failStream{Stream: st, f: f}, nil
}

type failStream struct {
	model.Stream
	f *failures
}

func (s *failStream) Next() (model.Delta, error) {
	d, err := s.Stream.Next()
	s.f.note(err)
	return d, err
}

// loopConfig is the loop configuration of job j on backend b.
func (o Options) loopConfig(b model.Backend, kind string, j job, name string) loop.Config {
	lc := o.Loop
	lc.Model = b
	lc.Sampling.Seed = Seed(lc.Sampling.Seed, kind, j.suite, name, j.repeat)
	lc.Now, lc.Sleep = o.Now, o.Sleep
	return lc
}

// Seed is the sampling seed of one run of an evaluation seeded with base:
// it depends on the run's kind ("task" or "decision"), suite, name and
// repeat only, never on which worker runs it or when, so an evaluation
// gives the same results at any --parallel, and the repeats of a task
// differ from each other.
func Seed(base uint64, kind, suite, name string, repeat int) uint64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], base)
	h.Write(b[:])
	for _, s := range []string{kind, suite, name} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	binary.LittleEndian.PutUint64(b[:], uint64(repeat))
	h.Write(b[:])
	return h.Sum64()
}

// runTask runs one task on a fresh simulated phone and judges it by the
// phone's state (and, for information tasks, the summary).
func runTask(ctx context.Context, o Options, j job, r *TaskResult) {
	err := guard(func() error {
		phone, err := j.task.Open()
		if err != nil {
			return err
		}
		b, release, err := o.Model(ctx, "task", j.suite, j.task.Name)
		if err != nil {
			return fmt.Errorf("model: %w", err)
		}
		if release != nil {
			defer release()
		}
		fb := &failures{Backend: b}
		lc := o.loopConfig(fb, "task", j, j.task.Name)
		lc.Task = j.task.Text
		lc.Device = phone
		lc.DeviceName = "sim:" + j.task.Name
		lc.Verify = func(context.Context) error {
			if !phone.Success() {
				return fmt.Errorf("the simulated phone is not in the state the task asks for")
			}
			return nil
		}
		// Nobody watches a benchmark: sensitive actions (a "Send") are
		// approved, but they still go through the policy, which emits an
		// approval event the recording keeps.
		lc.Approver = func(context.Context, loop.ApprovalRequest) (loop.Decision, error) {
			return loop.Decision{Verdict: loop.Approve}, nil
		}
		consumers, finish, err := o.recordRun(j, recording.Header{
			Scripted: strings.HasPrefix(b.Name(), "script:"),
			Task:     lc.Task, Model: b.Name(), Device: lc.DeviceName,
			Note: "droidgo eval run " + j.suite + "/" + j.task.Name,
		}, r)
		if err != nil {
			return err
		}
		defer finish(ctx)
		lc.OnEvent = func(ev loop.Event) {
			consumers.Event(ev)
			switch ev.Type {
			case loop.EvModelStats:
				r.PromptTokens += ev.Stats.PromptTokens
				r.GeneratedTokens += ev.Stats.GeneratedTokens
			case loop.EvToolCall:
				if ev.Parse != nil {
					r.Recoveries += len(ev.Parse.Recoveries)
				}
			case loop.EvApproval:
				r.Approvals++
			}
		}
		lr := loop.Run(ctx, lc)
		if err := finish(ctx); err != nil {
			return err
		}
		if fb.err != nil {
			return fmt.Errorf("model: %w", fb.err)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("stopped after %d steps: %w", lr.Steps, ctx.Err())
		}
		r.Steps, r.Seconds, r.Summary = lr.Steps, lr.Seconds, lr.Summary
		r.Success, r.Reason = judge(j.task, lr)
		return nil
	})
	if err != nil {
		r.NotRun, r.Success, r.Reason = true, false, err.Error()
	}
}

// recordRun starts the recording of task run j in o.Out (runs/SUITE/NAME-rK.jsonl,
// with header h) and a readable transcript beside it, for the report's
// links; each takes the events from a queue of its own, so a slow disk
// does not slow the run. finish drains and closes them (once; later calls
// do nothing), and says whether the recording is complete. With no o.Out
// there is nothing to record.
func (o Options) recordRun(j job, h recording.Header, r *TaskResult) (consumers sink.Set, finish func(context.Context) error, err error) {
	if o.Out == "" {
		return nil, func(context.Context) error { return nil }, nil
	}
	rel := filepath.Join("runs", safeName(j.suite), fmt.Sprintf("%s-r%d.jsonl", safeName(j.task.Name), j.repeat))
	full := filepath.Join(o.Out, rel)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return nil, nil, err
	}
	h.Created = o.Now().UTC()
	rec, err := recording.Create(full, h)
	if err != nil {
		return nil, nil, err
	}
	tf, err := os.Create(full + ".txt")
	if err != nil {
		rec.Close()
		return nil, nil, err
	}
	r.Recording = filepath.ToSlash(rel)
	consumers = sink.Set{sink.New("recording "+full, rec.Consume, sink.Options{}),
		sink.New("transcript "+full+".txt", report.NewText(tf).Consume, sink.Options{})}
	done := false
	finish = func(ctx context.Context) error {
		if done {
			return nil
		}
		done = true
		err := consumers.Drain(ctx, drainGrace)
		err = errors.Join(err, rec.Close())
		if cerr := tf.Close(); cerr != nil && err == nil {
			err = cerr
		}
		return err
	}
	return consumers, finish, nil
}

// refusal recognises a summary that says the task cannot be done.
var refusal = regexp.MustCompile(`(?i)\b(not|no|cannot|can't|can’t|unable|impossible|isn't|doesn't|does not|is not|unavailable|unsupported|infeasible|nothing)\b`)

// judge decides a task run from the loop's result: the phone's check
// (already in lr.Success through Verify) and the summary's content.
func judge(t *Task, lr loop.Result) (bool, string) {
	if !lr.Success {
		return false, lr.Reason
	}
	low := strings.ToLower(lr.Summary)
	for _, a := range t.Meta.Answer {
		if !strings.Contains(low, strings.ToLower(strings.TrimSpace(a))) {
			return false, fmt.Sprintf("task_complete, but the summary %q does not contain the answer %q", lr.Summary, a)
		}
	}
	if t.Meta.Infeasible && !refusal.MatchString(lr.Summary) {
		return false, fmt.Sprintf("the task cannot be done on this phone, but the summary %q does not say so", lr.Summary)
	}
	return true, lr.Reason
}

// drainGrace is how long a stopped evaluation still waits for a run's
// recording and transcript to be written.
const drainGrace = 5 * time.Second

// safeName keeps a name usable as a file name.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, s)
}

// screenDevice shows one fixed screen and ignores every action: a decision
// is the first call the model makes on it.
type screenDevice struct {
	xml  []byte
	w, h int
}

func (d *screenDevice) Dump(ctx context.Context) ([]byte, error)       { return d.xml, ctx.Err() }
func (d *screenDevice) Tap(ctx context.Context, x, y int) error        { return ctx.Err() }
func (d *screenDevice) LongPress(ctx context.Context, x, y int) error  { return ctx.Err() }
func (d *screenDevice) Type(ctx context.Context, text string) error    { return ctx.Err() }
func (d *screenDevice) Key(ctx context.Context, key string) error      { return ctx.Err() }
func (d *screenDevice) OpenApp(ctx context.Context, name string) error { return ctx.Err() }
func (d *screenDevice) Size(ctx context.Context) (int, int, error)     { return d.w, d.h, ctx.Err() }
func (d *screenDevice) CurrentApp(ctx context.Context) (string, error) { return "", ctx.Err() }
func (d *screenDevice) Swipe(ctx context.Context, _, _, _, _ int, _ time.Duration) error {
	return ctx.Err()
}

// runDecision asks the model for one step on the case's screen.
func runDecision(ctx context.Context, o Options, j job, r *DecisionResult) {
	c := j.cas
	err := guard(func() error {
		scr, err := uixml.Parse(c.Screen)
		if err != nil {
			return fmt.Errorf("screen: %w", err)
		}
		b, release, err := o.Model(ctx, "decision", j.suite, c.Name)
		if err != nil {
			return fmt.Errorf("model: %w", err)
		}
		if release != nil {
			defer release()
		}
		fb := &failures{Backend: b}
		lc := o.loopConfig(fb, "decision", j, c.Name)
		lc.Task = c.Task
		lc.Device = &screenDevice{xml: c.Screen, w: scr.Width, h: scr.Height}
		lc.DeviceName = "screen:" + c.Name
		lc.MaxSteps = 1
		lc.Previous = c.History
		var call, refused *action.Call
		answered := false
		// The decision is the model's first answer, as in a single-screen
		// study: the run stops there, so no corrective turn follows and
		// the call is never carried out (a wait does not wait).
		dctx, stop := context.WithCancel(ctx)
		defer stop()
		lc.OnEvent = func(ev loop.Event) {
			if ev.Type == loop.EvToolCall && !answered {
				answered = true
				if ev.Call != nil {
					cc := *ev.Call
					call = &cc
				} else if ev.Parse != nil && ev.Parse.Refused != nil {
					rc := *ev.Parse.Refused
					refused = &rc
				}
				stop()
			}
		}
		start := o.Now()
		loop.Run(dctx, lc)
		r.Seconds = math.Round(o.Now().Sub(start).Seconds()*1000) / 1000
		if fb.err != nil {
			return fmt.Errorf("model: %w", fb.err)
		}
		if !answered {
			return errors.New("the model gave no answer")
		}
		r.Call, r.Refused = call, refused
		switch {
		case call != nil:
			r.ToolCorrect, r.ActionCorrect = Score(*call, c.Accept)
		case refused != nil:
			// The tool is the model's choice whatever its arguments; a
			// call the schema refused is never the right action.
			r.ToolCorrect, _ = Score(*refused, c.Accept)
		}
		return nil
	})
	if err != nil {
		r.NotRun, r.Reason = true, err.Error()
	}
}
