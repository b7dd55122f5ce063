package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/droidgo/droidgo/config"
	"github.com/droidgo/droidgo/internal/termsafe"
	"github.com/droidgo/droidgo/loop"
	"github.com/droidgo/droidgo/model"
	"github.com/droidgo/droidgo/model/openai"
	"github.com/droidgo/droidgo/recording"
	"github.com/droidgo/droidgo/report"
	"github.com/droidgo/droidgo/sink"
	"github.com/droidgo/droidgo/tui"
)

// runOptions are the inputs of `droidgo run`, separate from cobra so tests
// can call runRun directly.
type runOptions struct {
	d *deps

	task string
	// sims and devices are run's phones (repeatable flags); sim and
	// device are the one phone of a replay on a phone (phoneReplay).
	sims          []string
	devices       []string
	sim           string
	device        string
	model         string
	endpoint      string
	modelName     string
	maxSteps      int
	noThink       bool
	noPromptCache bool
	thinkBudget   int
	record        string
	json          bool
	noTUI         bool
	step          bool
	sensitive     []string
	sampling      samplingFlags
	cores         coreFlags
	// onPhone, detach and detached are the flags of a run on the phone
	// itself (onphone.go).
	onPhone, detach, detached bool

	// set records which flags were given, so they override the
	// configuration file and the environment.
	set map[string]bool
	// poll overrides the settle poll interval (0: the default for the
	// device kind).
	poll time.Duration
}

func newRunCmd(d *deps) *cobra.Command {
	o := &runOptions{d: d}
	c := &cobra.Command{
		Use:   "run [TASK]",
		Short: "Let the model carry out a task on a phone or a simulated phone",
		Long: `Run the agent: each step it reads the screen, asks the model for one tool
call, checks it, carries it out and watches what changed, until the model calls
task_complete, a budget runs out, it stops making progress, or you press Ctrl-C.

On a terminal the run is shown in the TUI; with --no-tui, or when stdout is not
a terminal, it is printed as plain streaming text; with --json as one JSON
event per line. --record saves everything (screens, prompts, model output,
actions, timings, result) for 'droidgo replay'.

With --sim the task may be left out: the scenario's own task is used.

Exit status: 0 when the model called task_complete and, on a simulator, the
scenario's success check holds; 1 when the run failed or was stopped; 2 on a
usage or configuration error.`,
		Example: `  droidgo run "Turn on Wi-Fi" --sim wifi --model script:fixtures/scripts/wifi.txt
  droidgo run --sim alarm --model script:fixtures/scripts/alarm.txt --no-tui
  droidgo run "Turn off Bluetooth" --device emulator-5554 --model Spark-X2.5-1.7B-Q4_K_M.gguf --record bt.jsonl`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.task = args[0]
			}
			o.set = map[string]bool{}
			cmd.Flags().Visit(func(f *pflag.Flag) { o.set[f.Name] = true })
			switch {
			case o.onPhone:
				return runOnPhone(o, cmd.Flags())
			case o.detach:
				return startDetached(o, cmd.Flags())
			}
			return runRun(o)
		},
	}
	f := c.Flags()
	f.StringArrayVar(&o.sims, "sim", nil, "run on the simulated phone of scenario `NAME` (see 'droidgo sim list'); repeat it for several phones")
	f.StringArrayVarP(&o.devices, "device", "s", nil, "run on the ADB device with this `SERIAL`; repeat it for several phones, or all for every attached one")
	f.StringVarP(&o.model, "model", "m", "", "the model: script:FILE[?pace=DUR], a GGUF file or an HF directory")
	f.StringVar(&o.endpoint, "endpoint", "", "use the OpenAI-compatible server at `URL` (vLLM, SGLang, llama-server, ollama) instead of a model file")
	f.StringVar(&o.modelName, "model-name", "", "the model's `NAME` on the --endpoint server (default: the only one it serves; several is an error)")
	f.IntVar(&o.maxSteps, "max-steps", loop.DefaultMaxSteps, "step budget")
	f.BoolVar(&o.noThink, "no-think", false, "turn the model's reasoning off")
	f.BoolVar(&o.noPromptCache, "no-prompt-cache", false, "neither load nor save the fixed prompt prefix's KV state on disk (setting prompt_cache)")
	f.IntVar(&o.thinkBudget, "think-budget", config.DefaultThinkBudget, "reasoning tokens per step before the reasoning is closed (0: no limit)")
	f.StringVar(&o.record, "record", "", "record the run to `FILE.jsonl` for 'droidgo replay'")
	f.BoolVar(&o.json, "json", false, "print one JSON event per line")
	f.BoolVar(&o.noTUI, "no-tui", false, "print plain text even on a terminal")
	f.BoolVar(&o.step, "step", false, "step mode: every action waits for approval")
	f.StringSliceVar(&o.sensitive, "sensitive", loop.DefaultSensitive, "labels whose taps always wait for approval (comma-separated; \"\" for none)")
	o.sampling.add(f)
	o.cores.add(f)
	f.DurationVar(&o.poll, "poll", 0, "interval of the dumps that wait for the screen to settle (default 300ms on a phone, 10ms on a simulator)")
	_ = f.MarkHidden("poll")
	f.BoolVar(&o.onPhone, "on-phone", false, "run droidgo on the phone itself (put there by 'droidgo deploy'), shown on this terminal")
	f.BoolVar(&o.detach, "detach", false, "with --on-phone (or on the phone): keep the run going in the background; 'droidgo attach' shows it, 'droidgo stop' ends it")
	f.BoolVar(&o.detached, "detached", false, "this is the background run --detach started")
	_ = f.MarkHidden("detached")
	return c
}

// settings merges the configuration (defaults, file, environment) with
// the flags that were given, and refuses a step budget below one or a
// negative think budget (usage errors, for run and eval alike).
func (o *runOptions) settings() (*config.Config, error) {
	cfg, err := config.Load(o.d.getenv)
	if err != nil {
		return nil, usageErr(err)
	}
	flags := []struct{ key, flag, value string }{
		{"model", "model", o.model},
		{"endpoint", "endpoint", o.endpoint},
		{"model_name", "model-name", o.modelName},
		{"device", "device", cmp.Or(o.device, singleDevice(o.devices))},
		{"max_steps", "max-steps", fmt.Sprint(o.maxSteps)},
		{"think", "no-think", fmt.Sprint(!o.noThink)},
		{"think_budget", "think-budget", fmt.Sprint(o.thinkBudget)},
		{"sensitive", "sensitive", strings.Join(o.sensitive, ",")},
		{"prompt_cache", "no-prompt-cache", fmt.Sprint(!o.noPromptCache)},
		{"temperature", "temperature", fmt.Sprint(o.sampling.temperature)},
		{"top_p", "top-p", fmt.Sprint(o.sampling.topP)},
		{"seed", "seed", fmt.Sprint(o.sampling.seed)},
		{"vote", "vote", fmt.Sprint(o.sampling.vote)},
	}
	for _, fl := range flags {
		if o.set[fl.flag] && !(fl.key == "device" && fl.value == "") {
			if err := cfg.SetFlag(fl.key, fl.value, fl.flag); err != nil {
				return nil, usageErr(err)
			}
		}
	}
	if err := o.cores.apply(cfg, func(flag string) bool { return o.set[flag] }); err != nil {
		return nil, err
	}
	if o.set["sensitive"] && len(o.sensitive) == 0 {
		cfg.Sensitive = []string{}
	}
	return cfg, nil
}

// singleDevice is the one serial --device gave, or "" when it gave
// several (or all): the device setting names one phone.
func singleDevice(devices []string) string {
	if len(devices) == 1 && devices[0] != "all" {
		return devices[0]
	}
	return ""
}

// samplingFlags are the flags of run and eval that say how a step's call
// is drawn: the sampling settings, and the vote of several chains.
type samplingFlags struct {
	temperature, topP float64
	seed, vote        int
}

func (s *samplingFlags) add(f *pflag.FlagSet) {
	f.Float64Var(&s.temperature, "temperature", config.DefaultTemperature, "sampling temperature (0: greedy, always the most likely token)")
	f.Float64Var(&s.topP, "top-p", config.DefaultTopP, "nucleus sampling: draw from the most likely tokens that make up this much probability")
	f.IntVar(&s.seed, "seed", 0, "sampling `SEED`: the same seed, model and screens give the same run")
	f.IntVar(&s.vote, "vote", 1, "decode `N` thinking chains per step together and take the call most of them agree on (1: one chain)")
}

// chooseModel opens the model the settings name: a model (--model) or a
// server (--endpoint), whichever was given with more authority (flag, then
// environment, then file); else the default model if it was pulled; else
// it says how to get one. The openers get the settings (the engine's
// threads, KV type, prompt cache...).
func (d *deps) chooseModel(ctx context.Context, cfg *config.Config) (model.Backend, error) {
	src, err := modelSourceOf(cfg)
	if err != nil {
		return nil, err
	}
	switch src {
	case fromModel:
		return d.openModel(ctx, cfg.Model, cfg)
	case fromEndpoint:
		b, err := openai.New(ctx, openai.Config{BaseURL: cfg.Endpoint, Model: cfg.ModelName})
		if err != nil {
			return nil, usageErr(err)
		}
		return b, nil
	}
	if p, ok := d.defaultModel(); ok {
		return d.openModel(ctx, p, cfg)
	}
	return nil, usageErr(errors.New("no model: download Spark with 'droidgo pull', or pass --model FILE.gguf, --endpoint URL (an OpenAI-compatible server) or --model script:FILE"))
}

// modelSource is where a run's model comes from.
type modelSource int

const (
	fromDefault  modelSource = iota // neither is set: the pulled model
	fromModel                       // the model setting
	fromEndpoint                    // the endpoint setting
)

// modelSourceOf chooses between the model and the endpoint settings: the
// one given with more authority (flag, then environment, then file).
func modelSourceOf(cfg *config.Config) (modelSource, error) {
	if err := modelConflict(cfg); err != nil {
		return 0, err
	}
	m, e := cfg.Sources["model"].Origin, cfg.Sources["endpoint"].Origin
	if cfg.Model == "" {
		m = -1
	}
	if cfg.Endpoint == "" {
		e = -1
	}
	switch {
	case m > e:
		return fromModel, nil
	case e > m:
		return fromEndpoint, nil
	}
	return fromDefault, nil
}

// modelConflict refuses a model and an endpoint set with the same
// authority (both flags, both in the environment, both in the file): a
// usage error, for run and eval alike.
func modelConflict(cfg *config.Config) error {
	if cfg.Model != "" && cfg.Endpoint != "" && cfg.Sources["model"].Origin == cfg.Sources["endpoint"].Origin {
		return usageErr(fmt.Errorf("both a model (%s) and an endpoint (%s) are set by %s; give only one", cfg.Model, cfg.Endpoint, cfg.Sources["model"]))
	}
	return nil
}

// openModel opens a --model value: "SCHEME:REST" when d.modelOpeners has
// SCHEME, else a model file or directory.
func (d *deps) openModel(ctx context.Context, spec string, cfg *config.Config) (model.Backend, error) {
	if spec == "" {
		return nil, usageErr(errors.New("no model given; use --model script:FILE or --model MODEL.gguf"))
	}
	if scheme, rest, ok := strings.Cut(spec, ":"); ok {
		if open, ok := d.modelOpeners[scheme]; ok {
			b, err := open(ctx, rest, cfg)
			if err != nil {
				return nil, usageErr(err)
			}
			return b, nil
		}
		if len(scheme) > 1 && isWord(scheme) {
			if _, err := os.Stat(spec); err != nil {
				return nil, usageErr(fmt.Errorf("model backend %q is not built into this droidgo", scheme))
			}
		}
	}
	b, err := d.modelOpeners["file"](ctx, spec, cfg)
	if err != nil {
		return nil, usageErr(err)
	}
	return b, nil
}

func isWord(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

func runRun(o *runOptions) error {
	d := o.d
	cfg, err := o.settings()
	if err != nil {
		return err
	}
	if o.detached {
		if err := registerDetached(o); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(d.ctx)
	defer cancel()

	ts, err := o.targets(ctx, cfg.Device)
	if err != nil {
		return err
	}
	phones, err := d.openPhones(ctx, ts)
	if err != nil {
		if len(ts) == 1 {
			o.recordSetupFailure(cfg, err)
		}
		return err
	}
	defer closePhones(phones)
	for _, p := range phones {
		p.task = strings.TrimSpace(o.task)
		if p.task == "" {
			if t, ok := p.dev.(interface{ Task() string }); ok {
				p.task = t.Task()
			}
		}
		if p.task == "" {
			return usageErr(errors.New("no task given; say what to do, e.g. droidgo run \"Turn on Wi-Fi\""))
		}
	}
	if err := recordPaths(o.record, phones); err != nil {
		return err
	}
	if err := checkVote(cfg); err != nil {
		return err
	}
	models, err := d.runModels(ctx, cfg, len(phones))
	if err != nil {
		return err
	}
	defer models.close()

	lcs := make([]loop.Config, len(phones))
	var sinks sink.Set
	var recs []*recording.Writer
	names := make([]string, len(phones))
	for i, p := range phones {
		names[i] = p.name
		backend, err := models.open(ctx, p)
		if err != nil {
			return err
		}
		lc := cfg.Loop()
		lc.Task, lc.Device, lc.DeviceName, lc.Model = p.task, p.dev, p.name, backend
		lc.StepMode = o.step
		lc.Now, lc.Sleep = d.now, d.sleep
		if o.poll > 0 {
			lc.PollInterval = o.poll
		} else if p.sim != "" {
			lc.PollInterval = loop.SimulatedPollInterval
		}
		if s, ok := p.dev.(interface{ Success() bool }); ok {
			// The simulator checks its scenario's task, whatever the user
			// asked: the message quotes that check, and a different task is
			// warned about before the run starts.
			checks := p.task
			if t, ok := p.dev.(interface{ Task() string }); ok && t.Task() != "" {
				checks = t.Task()
				if !sameTask(p.task, checks) {
					lc.Warnings = append(lc.Warnings, fmt.Sprintf("the task is not scenario %s's task (%q): the simulator checks that one, so this run can succeed only if the model does it", p.sim, checks))
				}
			}
			sim := p.sim
			lc.Verify = func(context.Context) error {
				if !s.Success() {
					return fmt.Errorf("the simulator's check for scenario %s (%q) does not hold", sim, checks)
				}
				return nil
			}
		}
		lcs[i] = lc
		if p.recPath != "" {
			only := ""
			if len(phones) > 1 {
				only = p.name // each phone's recording holds its events only
			}
			rec, q, err := recordTo(p.recPath, recording.Header{
				Created:  d.clock().UTC(),
				Scripted: strings.HasPrefix(backend.Name(), "script:"),
				Task:     p.task,
				Model:    backend.Name(),
				Device:   p.name,
				Note:     recordingNote(backend.Name()),
			}, only)
			if err != nil {
				closeRecordings(recs)
				return err
			}
			recs = append(recs, rec)
			sinks = append(sinks, q)
		}
	}

	// The user can turn step mode on with a key, so the TUI sees every
	// call (runLoops consults it always).
	uo := tui.Options{Task: phones[0].task, Device: phones[0].name, Model: lcs[0].Model.Name(), MaxSteps: cfg.MaxSteps, StepMode: o.step, EveryCall: true}
	if len(phones) > 1 {
		uo.Devices = names
	}
	results := make([]*loop.Result, len(phones))
	res, err := d.show(ctx, view{json: o.json, noTUI: o.noTUI, sinks: sinks, devices: names, ui: uo}, d.runLoops(lcs, o.step, results))
	// A recording that could not be written is lost work: the run fails
	// whatever its result (show reported a failed write with how far the
	// recording got).
	if cerr := closeRecordings(recs); cerr != nil && err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if !res.Success {
		return exitCode(1)
	}
	return nil
}

// recordTo starts the recording a --record flag names, and the queue in
// front of it for view.sinks; only, when set, keeps the events of that
// phone alone (a run on several phones). A path that cannot be created is
// a usage error; one that cannot be written (a full disk) is not.
func recordTo(path string, h recording.Header, only string) (*recording.Writer, *sink.Queue, error) {
	rec, err := recording.Create(path, h)
	var pe *fs.PathError
	if err != nil && errors.As(err, &pe) && pe.Op == "open" {
		return nil, nil, usageErr(err)
	}
	if err != nil {
		return nil, nil, err
	}
	consume := rec.Consume
	if only != "" {
		consume = func(ev loop.Event) error {
			if ev.Device != only {
				return nil
			}
			return rec.Consume(ev)
		}
	}
	return rec, sink.New("recording "+path, consume, sink.Options{}), nil
}

// checkVote refuses a vote over a script model: a script plays fixed
// turns in order, so each chain would take the next one.
func checkVote(cfg *config.Config) error {
	if cfg.Vote > 1 && strings.HasPrefix(cfg.Model, "script:") && cfg.Sources["model"].Origin >= cfg.Sources["endpoint"].Origin {
		return usageErr(fmt.Errorf("--vote %d needs a model that samples: a script plays its turns in order, so each chain would take the next one", cfg.Vote))
	}
	return nil
}

// closeRecordings closes every recording and returns the first error.
func closeRecordings(recs []*recording.Writer) error {
	var first error
	for _, r := range recs {
		if err := r.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// runModels says where each phone's model comes from: one backend opened
// once and shared by every phone (the engine serves their turns together),
// except scripts, which play from their first turn for each phone (a
// directory holds one per scenario or serial, NAME.txt, else default.txt).
type runModels struct {
	shared model.Backend
	open   func(ctx context.Context, p *phone) (model.Backend, error)
	closes []func()
}

func (m *runModels) close() {
	for _, c := range m.closes {
		c()
	}
}

func (d *deps) runModels(ctx context.Context, cfg *config.Config, phones int) (*runModels, error) {
	m := &runModels{}
	keep := func(b model.Backend) {
		if c, ok := b.(io.Closer); ok {
			m.closes = append(m.closes, func() { c.Close() })
		}
	}
	if spec, ok := strings.CutPrefix(cfg.Model, "script:"); ok && (phones > 1 || isDirSpec(spec)) && cfg.Sources["model"].Origin >= cfg.Sources["endpoint"].Origin {
		if err := modelConflict(cfg); err != nil {
			return nil, err
		}
		path, query, _ := strings.Cut(spec, "?")
		if query != "" {
			query = "?" + query
		}
		m.open = func(ctx context.Context, p *phone) (model.Backend, error) {
			file := path
			if isDirSpec(spec) {
				file = phoneScript(path, p)
			}
			b, err := d.openModel(ctx, "script:"+file+query, cfg)
			if err == nil {
				keep(b)
			}
			return b, err
		}
		return m, nil
	}
	b, err := d.chooseModel(ctx, cfg)
	if err != nil {
		return nil, err
	}
	keep(b)
	m.shared = b
	m.open = func(context.Context, *phone) (model.Backend, error) { return b, nil }
	return m, nil
}

// isDirSpec reports whether a script spec names a directory.
func isDirSpec(spec string) bool {
	path, _, _ := strings.Cut(spec, "?")
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

// phoneScript picks a phone's script in a directory: SCENARIO.txt (or
// SERIAL.txt), else default.txt.
func phoneScript(dir string, p *phone) string {
	name := p.sim
	if name == "" {
		name = p.fileName()
	}
	if f := filepath.Join(dir, name+".txt"); fileExists(f) {
		return f
	}
	return filepath.Join(dir, "default.txt")
}

func fileExists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// sameTask reports whether two task texts say the same, ignoring case,
// spacing and a final full stop.
func sameTask(a, b string) bool {
	norm := func(s string) string {
		return strings.TrimSuffix(strings.Join(strings.Fields(strings.ToLower(s)), " "), ".")
	}
	return norm(a) == norm(b)
}

// recordSetupFailure keeps a recording of a run that could not start
// because its device could not be opened (no adb server, a phone that is
// gone), so a --record file always tells how the run ended.
func (o *runOptions) recordSetupFailure(cfg *config.Config, cause error) {
	var ee *exitError
	if o.record == "" || errors.As(cause, &ee) {
		return // usage errors are reported, not recorded
	}
	now := o.d.clock
	dev := cfg.Device
	if dev == "" {
		dev = "adb"
	}
	rec, err := recording.Create(o.record, recording.Header{Created: now().UTC(), Task: o.task, Device: dev, Model: cfg.Model})
	if err != nil {
		fmt.Fprintf(o.d.stderr, "droidgo: %v\n", err)
		return
	}
	rec.Event(loop.Event{Type: loop.EvRunStarted, Time: now(), Task: o.task, Device: dev, MaxSteps: cfg.MaxSteps})
	rec.Event(loop.Event{Type: loop.EvFinished, Time: now(), Result: &loop.Result{Reason: "device: " + cause.Error()}})
	if err := rec.Close(); err != nil {
		fmt.Fprintf(o.d.stderr, "droidgo: %v\n", err)
	}
}

func recordingNote(modelName string) string {
	if strings.HasPrefix(modelName, "script:") {
		return "scripted run: the model output was written by hand (model/script), not generated by a model"
	}
	return ""
}

// runLoops plays one agent loop per phone, all at once, sharing emit (each
// event names its phone). Under the TUI the TUI approves, and is asked
// before every action so step mode can be turned on mid-run; without it,
// step mode asks on stdin, naming the phone when there are several.
// results receives each phone's result; the result returned is the run's:
// a success only when every phone succeeded.
func (d *deps) runLoops(lcs []loop.Config, step bool, results []*loop.Result) player {
	return func(ctx context.Context, emit func(loop.Event), ui *tui.UI) (*loop.Result, error) {
		var ask loop.Approver
		if ui == nil && step {
			ask = lineApprover(d.stdin, d.stderr, len(lcs) > 1)
		}
		var wg sync.WaitGroup
		for i, lc := range lcs {
			lc.OnEvent = emit
			switch {
			case ui != nil:
				lc.Approver = ui.Approve
				lc.Hold = ui.Hold
				lc.ConsultAlways = true
			case step:
				lc.Approver = ask
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				res := loop.Run(ctx, lc)
				results[i] = &res
			}()
		}
		wg.Wait()
		if len(results) == 1 {
			return results[0], nil
		}
		return combined(lcs, results), nil
	}
}

// combined is the result of a run on several phones: a success when every
// phone succeeded, its reason naming each phone's.
func combined(lcs []loop.Config, results []*loop.Result) *loop.Result {
	all := &loop.Result{Success: true}
	ok := 0
	var parts []string
	for i, r := range results {
		all.Steps += r.Steps
		all.Seconds = max(all.Seconds, r.Seconds)
		verdict := "failure"
		if r.Success {
			ok++
			verdict = "success"
		} else {
			all.Success = false
		}
		parts = append(parts, fmt.Sprintf("%s %s (%s)", lcs[i].DeviceName, verdict, r.Reason))
	}
	all.Reason = fmt.Sprintf("%d of %d phones succeeded: %s", ok, len(results), strings.Join(parts, "; "))
	return all
}

// printSummary leaves the result on the terminal once the UI is gone.
func printSummary(w io.Writer, res loop.Result) {
	w = termsafe.NewWriter(w) // the reason may quote the model
	fmt.Fprintf(w, "%s — %s in %.1f s\n", report.Verdict(res), loop.Steps(res.Steps), res.Seconds)
}

// lineApprover asks on the terminal's stdin for step mode without the TUI;
// with several phones the question names the phone.
func lineApprover(in io.Reader, out io.Writer, many bool) loop.Approver {
	out = termsafe.NewWriter(out) // the call and label are the model's and the screen's
	br := bufio.NewReader(in)
	var mu sync.Mutex
	return func(ctx context.Context, req loop.ApprovalRequest) (loop.Decision, error) {
		mu.Lock()
		defer mu.Unlock()
		for {
			label := ""
			if req.Label != "" {
				label = fmt.Sprintf(" on %q", req.Label)
			}
			on := ""
			if many {
				on = req.Device + ": "
			}
			fmt.Fprintf(out, "%sapprove %s%s (%s)? [y]es, [s]kip, [a]bort: ", on, req.Call.String(), label, req.Reason)
			line, err := readLine(ctx, br)
			if err != nil {
				if errors.Is(err, io.EOF) {
					return loop.Decision{Verdict: loop.Abort}, nil
				}
				return loop.Decision{}, err
			}
			switch strings.ToLower(strings.TrimSpace(line)) {
			case "y", "yes":
				return loop.Decision{Verdict: loop.Approve}, nil
			case "s", "skip", "n", "no":
				return loop.Decision{Verdict: loop.Skip}, nil
			case "a", "abort", "q", "quit":
				return loop.Decision{Verdict: loop.Abort}, nil
			}
		}
	}
}

// readLine reads a line, giving up when ctx ends (the read itself is left
// behind; the process is about to end then).
func readLine(ctx context.Context, br *bufio.Reader) (string, error) {
	type result struct {
		s   string
		err error
	}
	ch := make(chan result, 1)
	go func() {
		s, err := br.ReadString('\n')
		if err != nil && s != "" && errors.Is(err, io.EOF) {
			err = nil
		}
		ch <- result{s, err}
	}()
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case r := <-ch:
		return r.s, r.err
	}
}
