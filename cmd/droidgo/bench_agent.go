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
	"github.com/droidgo/droidgo/device"
	"github.com/droidgo/droidgo/internal/termsafe"
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

	sim, model      string
	steps, parallel int
	cores           coreFlags
	changed         func(flag string) bool
	cold, json      bool
	unbatched       bool
	cpuProfile      string
}

func newBenchAgentCmd(d *deps) *cobra.Command {
	o := &benchAgentOptions{d: d}
	c := &cobra.Command{
		Use:   "agent [--sim SCENARIO] [--model FILE] [--steps N] [--threads N] [--parallel N] [--cold] [--json]",
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
"answer_tokens":..,"forced_tokens":..,"answer_s":..,"overhead_s":..,"total_s":..}]}

--parallel N runs N agents at once, each on its own simulated phone of the
scenario, on one engine (their turns computed together), and reports the
run's wall time, the memory (peak resident, the model file, the shared
prompt prefixes and the sequences' own KV caches) and each agent's steps;
--json then prints {"model":..,"threads":..,"parallel":N,"wall_s":..,
"rss_mb":..,"model_mb":..,"prefix_mb":..,"kv_mb":..,"agents":[{"agent":1,
"success":..,"reason":..,"steps":[...as above...]}]}.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.changed = cmd.Flags().Changed
			return runBenchAgent(o)
		},
	}
	f := c.Flags()
	f.StringVar(&o.sim, "sim", "wifi", "the simulator `SCENARIO` (see 'droidgo sim list')")
	f.StringVarP(&o.model, "model", "m", "", "the model `FILE` (GGUF) or HF directory")
	f.IntVar(&o.steps, "steps", 3, "steps to run")
	f.IntVar(&o.parallel, "parallel", 1, "run `N` agents at once, each on its own simulated phone, on one engine")
	o.cores.add(f)
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
	if o.parallel < 1 || o.parallel > maxBenchSequences {
		return usageErr(fmt.Errorf("--parallel must be between 1 and %d, not %d", maxBenchSequences, o.parallel))
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
	if err := o.cores.apply(cfg, o.changed); err != nil {
		return err
	}
	path, err := o.modelPath(cfg)
	if err != nil {
		return err
	}
	ctx := d.ctx
	// The phones first: a scenario that does not exist is a usage error
	// before the model loads.
	devs := make([]device.Device, o.parallel)
	for i := range devs {
		dev, err := d.openSim(ctx, o.sim)
		if err != nil {
			return usageErr(err)
		}
		defer closeDevice(dev)
		devs[i] = dev
	}
	b, err := openLocalWith(cfg, path, localOpts{getenv: d.getenv, meminfo: d.meminfo, sequences: o.parallel, cold: o.cold, unbatched: o.unbatched, warn: d.stderr})
	if err != nil {
		return err
	}
	defer b.Close()
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
	start := time.Now()
	runs := make([]benchRun, len(devs))
	recs := make([]*benchBackend, len(devs))
	var wg sync.WaitGroup
	for i, dev := range devs {
		recs[i] = &benchBackend{benchModel: b}
		wg.Add(1)
		go func() {
			defer wg.Done()
			runs[i] = o.runAgent(ctx, cfg, dev, recs[i])
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	for _, r := range runs {
		if len(r.stepStart) == 0 {
			return fmt.Errorf("the agent ran no step: %s", r.res.Reason)
		}
	}
	if o.parallel == 1 {
		out := benchAgentJSON{Model: b.Name(), Threads: b.Threads(), Steps: runs[0].steps(recs[0])}
		if o.json {
			return json.NewEncoder(d.jsonOut()).Encode(out)
		}
		return o.writeTable(out, runs[0].res)
	}
	out := benchAgentsJSON{Model: b.Name(), Threads: b.Threads(), Parallel: o.parallel, WallS: wall.Seconds(), RSSMB: peakRSSMB()}
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
		out.ModelMB = float64(st.Size()) / 1e6
	}
	prefix, own := b.KVBytes()
	out.PrefixMB, out.KVMB = float64(prefix)/1e6, float64(own)/1e6
	for i, r := range runs {
		out.Agents = append(out.Agents, benchAgentRunJSON{Agent: i + 1, Success: r.res.Success, Reason: r.res.Reason, Steps: r.steps(recs[i])})
	}
	if o.json {
		return json.NewEncoder(d.jsonOut()).Encode(out)
	}
	return o.writeAgents(out)
}

// runAgent runs one agent on dev with the model rec wraps, timing its steps.
func (o *benchAgentOptions) runAgent(ctx context.Context, cfg *config.Config, dev device.Device, rec *benchBackend) benchRun {
	task := ""
	if t, ok := dev.(interface{ Task() string }); ok {
		task = t.Task()
	}
	if task == "" {
		task = "Turn on Wi-Fi"
	}
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
	run.res = loop.Run(ctx, lc)
	return run
}

// benchAgentsJSON is `bench agent --parallel N --json` for N > 1: the
// run's wall time, the memory (peak resident; the model file, the shared
// prompt prefixes and the sequences' own KV caches in the engine at the
// end) and each agent's steps.
type benchAgentsJSON struct {
	Model    string              `json:"model"`
	Threads  int                 `json:"threads"`
	Parallel int                 `json:"parallel"`
	WallS    float64             `json:"wall_s"`
	RSSMB    float64             `json:"rss_mb"`
	ModelMB  float64             `json:"model_mb"`
	PrefixMB float64             `json:"prefix_mb"`
	KVMB     float64             `json:"kv_mb"`
	Agents   []benchAgentRunJSON `json:"agents"`
}

type benchAgentRunJSON struct {
	Agent   int             `json:"agent"`
	Success bool            `json:"success"`
	Reason  string          `json:"reason"`
	Steps   []benchStepJSON `json:"steps"`
}

// writeAgents prints the report of several agents for people.
func (o *benchAgentOptions) writeAgents(out benchAgentsJSON) error {
	w := o.d.stdout
	fmt.Fprintf(w, "%s, %d threads, %d agents on sim %s: %.2f s\n", out.Model, out.Threads, out.Parallel, o.sim, out.WallS)
	fmt.Fprintf(w, "memory: peak resident %.0f MB; model file %.0f MB, shared prefixes %.1f MB, the sequences' own KV %.1f MB\n", out.RSSMB, out.ModelMB, out.PrefixMB, out.KVMB)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "agent\tsteps\tresult\tprompt tok\tcached\tthink tok\tanswer tok\tprefill s\ttotal s\t")
	for _, a := range out.Agents {
		var prompt, cached, think, answer int
		var prefill, total float64
		for _, s := range a.Steps {
			prompt += s.PromptTokens
			cached += s.CachedTokens
			think += s.ThinkTokens
			answer += s.AnswerTokens
			prefill += s.PrefillS
			total += s.TotalS
		}
		verdict := "not done"
		if a.Success {
			verdict = "success"
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%d\t%d\t%d\t%d\t%.2f\t%.2f\t\n", a.Agent, len(a.Steps), termsafe.String(verdict), prompt, cached, think, answer, prefill, total)
	}
	return tw.Flush()
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
