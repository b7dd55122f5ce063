package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/droidgo/droidgo/config"
	"github.com/droidgo/droidgo/loop"
	"github.com/droidgo/droidgo/model"
)

// newBenchCmd is the group of the agent's benchmarks.
func newBenchCmd(d *deps) *cobra.Command {
	c := &cobra.Command{
		Use:   "bench",
		Short: "Benchmarks of the agent as a whole (see also 'droidgo model bench')",
	}
	c.AddCommand(newBenchAgentCmd(d))
	return c
}

// benchStepJSON is one step of `bench agent --json`.
type benchStepJSON struct {
	Step         int     `json:"step"`
	PromptTokens int     `json:"prompt_tokens"`
	CachedTokens int     `json:"cached_tokens"`
	DiskTokens   int     `json:"disk_tokens"`
	TTFTS        float64 `json:"ttft_s"`
	PrefillS     float64 `json:"prefill_s"`
	ThinkTokens  int     `json:"think_tokens"`
	ThinkS       float64 `json:"think_s"`
	AnswerTokens int     `json:"answer_tokens"`
	ForcedTokens int     `json:"forced_tokens"`
	AnswerS      float64 `json:"answer_s"`
	OverheadS    float64 `json:"overhead_s"`
	TotalS       float64 `json:"total_s"`
}

type benchAgentJSON struct {
	Model   string          `json:"model"`
	Threads int             `json:"threads"`
	Steps   []benchStepJSON `json:"steps"`
}

// benchThinkBudget is the reasoning budget of a step when think_budget is
// left at its default: the measurements use 64, and a random
// model would otherwise think for the whole default budget.
const benchThinkBudget = 64

// benchAgentOptions are the inputs of `droidgo bench agent`.
type benchAgentOptions struct {
	d *deps

	sim, model     string
	steps, threads int
	cold, json     bool
	unbatched      bool
	cpuProfile     string
}

func newBenchAgentCmd(d *deps) *cobra.Command {
	o := &benchAgentOptions{d: d}
	c := &cobra.Command{
		Use:   "agent [--sim SCENARIO] [--model FILE] [--steps N] [--threads N] [--cold] [--json]",
		Short: "Time the agent's steps on a simulated phone with the real engine",
		Long: `bench agent runs the agent on a scripted simulator scenario (default wifi)
with the in-process engine and a model file (--model, else the configured or
pulled model), for --steps steps (default 3; fewer if the model finishes), and
reports per step: prompt tokens (all, cached, loaded from the disk prompt
cache), time to the first token, prefill time, thinking tokens and time,
answer tokens (of them forced by the constraint) and time, the decoding time
spent outside the forward passes (sampling, constraint, detokenizing), and
the step's total wall time.

--cold neither loads nor saves the prompt cache on disk, as the first run
ever. The reasoning budget is the think_budget setting if it is set, else 64
tokens. Sampling is the agent's (the temperature, top_p and seed settings:
temperature 1, top-p 0.95 by default).

--json prints one object:
{"model":"...","threads":2,"steps":[{"step":1,"prompt_tokens":..,"cached_tokens":..,
"disk_tokens":..,"ttft_s":..,"prefill_s":..,"think_tokens":..,"think_s":..,
"answer_tokens":..,"forced_tokens":..,"answer_s":..,"overhead_s":..,"total_s":..}]}`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runBenchAgent(o) },
	}
	f := c.Flags()
	f.StringVar(&o.sim, "sim", "wifi", "the simulator `SCENARIO` (see 'droidgo sim list')")
	f.StringVarP(&o.model, "model", "m", "", "the model `FILE` (GGUF) or HF directory")
	f.IntVar(&o.steps, "steps", 3, "steps to run")
	f.IntVarP(&o.threads, "threads", "t", 0, "engine threads (0: the threads setting, else the physical cores)")
	f.BoolVar(&o.cold, "cold", false, "ignore the prompt cache on disk")
	f.BoolVar(&o.json, "json", false, "print JSON")
	f.BoolVar(&o.unbatched, "unbatched", false, "evaluate forced answer tokens one by one (for before/after measurements)")
	_ = f.MarkHidden("unbatched")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this `FILE`")
	_ = f.MarkHidden("cpuprofile")
	return c
}

// check refuses flags out of their ranges (usage errors).
func (o *benchAgentOptions) check() error {
	if o.steps < 1 {
		return usageErr(fmt.Errorf("--steps must be at least 1, not %d", o.steps))
	}
	if o.threads < 0 {
		return usageErr(fmt.Errorf("--threads must not be negative, not %d", o.threads))
	}
	return nil
}

// modelPath is the model file to time: --model, else the configured one,
// else the pulled default.
func (o *benchAgentOptions) modelPath(cfg *config.Config) (string, error) {
	path := o.model
	if path == "" {
		path = cfg.Model
	}
	if path == "" {
		p, ok := o.d.defaultModel()
		if !ok {
			return "", usageErr(errors.New("no model: pass --model FILE.gguf or download Spark with 'droidgo pull'"))
		}
		path = p
	}
	if strings.HasPrefix(path, "script:") {
		return "", usageErr(errors.New("bench agent needs a model file (GGUF or HF directory), not a script"))
	}
	return path, nil
}

// benchRun is what one timed run of the agent left.
type benchRun struct {
	res       loop.Result
	stepStart []time.Time // when each step started
	end       time.Time   // when the run finished
}

// steps turns the run's timings into the rows of the report.
func (r benchRun) steps(rec *benchBackend) []benchStepJSON {
	var out []benchStepJSON
	for i := range r.stepStart {
		next := r.end
		if i+1 < len(r.stepStart) {
			next = r.stepStart[i+1]
		}
		s := rec.step(i + 1)
		s.TotalS = next.Sub(r.stepStart[i]).Seconds()
		out = append(out, s)
	}
	return out
}

func runBenchAgent(o *benchAgentOptions) error {
	d := o.d
	if err := o.check(); err != nil {
		return err
	}
	cfg, err := config.Load(d.getenv)
	if err != nil {
		return usageErr(err)
	}
	path, err := o.modelPath(cfg)
	if err != nil {
		return err
	}
	ctx := d.ctx
	dev, err := d.openSim(ctx, o.sim)
	if err != nil {
		return usageErr(err)
	}
	defer closeDevice(dev)
	task := ""
	if t, ok := dev.(interface{ Task() string }); ok {
		task = t.Task()
	}
	if task == "" {
		task = "Turn on Wi-Fi"
	}
	b, err := openLocalWith(cfg, path, localOpts{getenv: d.getenv, threads: o.threads, cold: o.cold, unbatched: o.unbatched, warn: d.stderr})
	if err != nil {
		return err
	}
	defer b.Close()
	rec := &benchBackend{benchModel: b}
	var run benchRun
	lc := cfg.Loop()
	lc.Task, lc.Device, lc.DeviceName, lc.Model = task, dev, "sim:"+o.sim, rec
	lc.MaxSteps = o.steps
	if cfg.Sources["think_budget"].Origin == config.FromDefault {
		lc.ThinkBudget = benchThinkBudget
	}
	// Nobody approves anything in a benchmark: no label is sensitive.
	lc.Sensitive = []string{}
	lc.PollInterval = loop.SimulatedPollInterval
	lc.OnEvent = func(e loop.Event) {
		switch e.Type {
		case loop.EvStepStarted:
			run.stepStart = append(run.stepStart, time.Now())
			rec.setStep(e.Step)
		case loop.EvFinished:
			run.end = time.Now()
		}
	}
	if o.cpuProfile != "" {
		pf, err := os.Create(o.cpuProfile)
		if err != nil {
			return err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	run.res = loop.Run(ctx, lc)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if len(run.stepStart) == 0 {
		return fmt.Errorf("the agent ran no step: %s", run.res.Reason)
	}
	out := benchAgentJSON{Model: b.Name(), Threads: b.Threads(), Steps: run.steps(rec)}
	if o.json {
		return json.NewEncoder(d.jsonOut()).Encode(out)
	}
	return o.writeTable(out, run.res)
}

// writeTable prints the report for people.
func (o *benchAgentOptions) writeTable(out benchAgentJSON, res loop.Result) error {
	w := o.d.stdout
	verdict := "not done"
	if res.Success {
		verdict = "success"
	}
	fmt.Fprintf(w, "%s, %d threads, sim %s: %s (%s)\n", out.Model, out.Threads, o.sim, res.Reason, verdict)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "step\tprompt\tcached\tdisk\tttft s\tprefill s\tthink tok\tthink s\tanswer tok\tforced\tanswer s\toverhead s\ttotal s\t")
	for _, s := range out.Steps {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%.2f\t%.2f\t%d\t%.2f\t%d\t%d\t%.2f\t%.3f\t%.2f\t\n", s.Step, s.PromptTokens, s.CachedTokens, s.DiskTokens,
			s.TTFTS, s.PrefillS, s.ThinkTokens, s.ThinkS, s.AnswerTokens, s.ForcedTokens, s.AnswerS, s.OverheadS, s.TotalS)
	}
	return tw.Flush()
}

// benchBackend times the turns of the backend it wraps, per loop step.
type benchBackend struct {
	benchModel
	mu    sync.Mutex
	cur   int
	turns map[int][]*benchTurn
}

// benchModel is what bench agent needs of the in-process backend.
type benchModel interface {
	model.Backend
	Threads() int
}

type benchTurn struct {
	start, first time.Time
	stats        model.Stats
}

func (r *benchBackend) setStep(n int) {
	r.mu.Lock()
	r.cur = n
	r.mu.Unlock()
}

// Chat starts a turn of the current step; the prefill happens inside.
func (r *benchBackend) Chat(ctx context.Context, req model.ChatRequest) (model.Stream, error) {
	t := &benchTurn{start: time.Now()}
	st, err := r.benchModel.Chat(ctx, req)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	if r.turns == nil {
		r.turns = map[int][]*benchTurn{}
	}
	r.turns[r.cur] = append(r.turns[r.cur], t)
	r.mu.Unlock()
	return &benchStream{Stream: st, t: t, r: r}, nil
}

type benchStream struct {
	model.Stream
	t *benchTurn
	r *benchBackend
}

func (s *benchStream) Next() (model.Delta, error) {
	d, err := s.Stream.Next()
	s.r.mu.Lock()
	if err == nil && s.t.first.IsZero() && (d.Reasoning != "" || d.Content != "" || d.ReasoningClosed) {
		s.t.first = time.Now()
	}
	s.t.stats = s.Stream.Stats()
	s.r.mu.Unlock()
	return d, err
}

// step sums the turns of step n (a corrective retry is a second turn).
func (r *benchBackend) step(n int) benchStepJSON {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := benchStepJSON{Step: n}
	for i, t := range r.turns[n] {
		s := t.stats
		if i == 0 {
			out.PromptTokens, out.CachedTokens, out.DiskTokens = s.PromptTokens, s.CachedTokens, s.DiskTokens
			if !t.first.IsZero() {
				out.TTFTS = t.first.Sub(t.start).Seconds()
			}
		}
		out.PrefillS += s.Prefill.Seconds()
		out.ThinkTokens += s.ThinkTokens
		out.ThinkS += s.Think.Seconds()
		out.AnswerTokens += s.GeneratedTokens - s.ThinkTokens
		out.ForcedTokens += s.ForcedTokens
		out.AnswerS += s.Answer.Seconds()
		out.OverheadS += (s.Decode - s.Forward).Seconds()
	}
	return out
}
