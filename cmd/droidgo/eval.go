package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/droidgo/droidgo/config"
	"github.com/droidgo/droidgo/eval"
	"github.com/droidgo/droidgo/internal/termsafe"
	"github.com/droidgo/droidgo/loop"
	"github.com/droidgo/droidgo/model"
	"github.com/droidgo/droidgo/model/script"
)

// evalOptions are the inputs of `droidgo eval`.
type evalOptions struct {
	d *deps

	suites      []string
	model       string
	endpoint    string
	modelName   string
	parallel    int
	repeat      int
	maxSteps    int
	noThink     bool
	thinkBudget int
	filter      string
	out         string
	json        bool
	sampling    samplingFlags
	cores       coreFlags
	replay      string

	set map[string]bool
}

func newEvalCmd(d *deps) *cobra.Command {
	o := &evalOptions{d: d}
	c := &cobra.Command{
		Use:   "eval",
		Short: "Measure the agent on task and decision suites (no emulator needed)",
		Long: `Run benchmark suites and score them. A task suite runs multi-step tasks on
simulated phones and judges each by the phone's state (and, for questions, the
summary), never by the model's claim. A decision suite asks for single steps on
fixed screens and scores the tool and the full action against the accepted
calls.

--suite is "tasks", "decisions" (the built-in suites) or a directory of
scenario directories (NAME/scenario.json, with an optional apps/ beside them)
and/or a cases.jsonl of decision cases.

--model script:PATH plays scripts: a file is replayed from its first turn for
every task and case; a directory holds one script per task or case,
SUITE/NAME.txt or NAME.txt, else default.txt.

--replay DIR scores replays instead of a model ("replay success"): each task's
phone carries out, as 'droidgo replay --sim' does, the recorded run of the
scenario it varies (or of itself): DIR/NAME.jsonl, or an 'eval --out DIR'
directory's runs/tasks/NAME-r1.jsonl. It succeeds when every step was carried
out and the run ended as recorded, or, on the perturbed phones where a replay
must stop, when it stopped because the phone disagreed. The default suite is
then "perturbed"; decision suites cannot be replayed.

Exit status: 0 when the evaluation ran, whatever the score; 1 when it could
not run; 2 on a usage error.`,
		Example: `  droidgo eval --model Spark-X2.5-1.7B-Q4_K_M.gguf --out eval-q4
  droidgo eval --endpoint http://127.0.0.1:8000/v1 --parallel 8 --repeat 3 --json > results.json
  droidgo eval --suite tasks --filter 'wifi|bluetooth' --model script:fixtures/scripts/eval
  droidgo eval --suite tasks --model script:fixtures/scripts/eval --out runs && droidgo eval --replay runs
  droidgo eval compare eval-q4/results.json eval-q8/results.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.set = map[string]bool{}
			cmd.Flags().Visit(func(f *pflag.Flag) { o.set[f.Name] = true })
			return runEval(o)
		},
	}
	f := c.Flags()
	f.StringArrayVar(&o.suites, "suite", nil, "`SUITE`: tasks, decisions, perturbed or a suite directory (repeatable; default: tasks and decisions)")
	f.StringVarP(&o.model, "model", "m", "", "the model: a GGUF file, an HF directory, or script:FILE|DIR")
	f.StringVar(&o.endpoint, "endpoint", "", "use the OpenAI-compatible server at `URL` instead of a model file")
	f.StringVar(&o.modelName, "model-name", "", "the model's `NAME` on the --endpoint server (default: the only one it serves)")
	f.IntVar(&o.parallel, "parallel", 1, "run `N` simulated phones at once")
	f.IntVar(&o.repeat, "repeat", 1, "run every task and case `K` times")
	f.IntVar(&o.maxSteps, "max-steps", loop.DefaultMaxSteps, "step budget per task")
	f.BoolVar(&o.noThink, "no-think", false, "turn the model's reasoning off")
	f.IntVar(&o.thinkBudget, "think-budget", config.DefaultThinkBudget, "reasoning tokens per step before the reasoning is closed (0: no limit)")
	f.StringVar(&o.filter, "filter", "", "run only the tasks and cases whose SUITE/NAME matches `REGEXP`")
	f.StringVar(&o.out, "out", "", "write results.json, report.html and a recording per task run to `DIR`")
	f.BoolVar(&o.json, "json", false, "print results.json to stdout")
	f.StringVar(&o.replay, "replay", "", "score replays of the recorded runs in `DIR` instead of a model (default suite: perturbed)")
	o.sampling.add(f)
	o.cores.add(f)
	c.AddCommand(newEvalCompareCmd(d))
	return c
}

func runEval(o *evalOptions) error {
	d := o.d
	switch {
	case o.parallel < 1:
		return usageErr(fmt.Errorf("--parallel must be at least 1, not %d", o.parallel))
	case o.repeat < 1:
		return usageErr(fmt.Errorf("--repeat must be at least 1, not %d", o.repeat))
	case o.set["model"] && o.set["endpoint"]:
		return usageErr(errors.New("--model and --endpoint cannot be used together"))
	case o.replay != "" && (o.set["model"] || o.set["endpoint"]):
		return usageErr(errors.New("--replay scores recorded runs, not a model: it takes no --model or --endpoint"))
	}
	if o.replay != "" {
		if st, err := os.Stat(o.replay); err != nil || !st.IsDir() {
			return usageErr(fmt.Errorf("--replay %s: not a directory of recordings", o.replay))
		}
	}
	var filter *regexp.Regexp
	if o.filter != "" {
		var err error
		if filter, err = regexp.Compile(o.filter); err != nil {
			return usageErr(fmt.Errorf("--filter: %w", err))
		}
	}
	// The settings follow droidgo run's: defaults < file < environment < flags.
	ro := &runOptions{d: d, model: o.model, endpoint: o.endpoint, modelName: o.modelName,
		maxSteps: o.maxSteps, noThink: o.noThink, thinkBudget: o.thinkBudget, set: o.set,
		sensitive: loop.DefaultSensitive, sampling: o.sampling, cores: o.cores}
	cfg, err := ro.settings()
	if err != nil {
		return err
	}
	specs := o.suites
	switch {
	case len(specs) == 0 && o.replay != "":
		specs = []string{eval.BuiltinPerturbed}
	case len(specs) == 0:
		specs = []string{eval.BuiltinTasks, eval.BuiltinDecisions}
	}
	var suites []*eval.Suite
	for _, s := range specs {
		su, err := eval.Load(s)
		if err != nil {
			return usageErr(err)
		}
		if o.replay != "" && len(su.Cases) > 0 {
			return usageErr(fmt.Errorf("--suite %s has decision cases, which have no recorded run to replay", s))
		}
		suites = append(suites, su)
	}
	if o.out != "" {
		if err := os.MkdirAll(o.out, 0o755); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}

	ctx, cancel := context.WithCancel(d.ctx)
	defer cancel()
	if err := checkVote(cfg); err != nil {
		return err
	}
	var models eval.ModelFunc
	var replays eval.ReplayFunc
	name := "replay:" + o.replay
	if o.replay != "" {
		replays = eval.Replays(o.replay)
	} else {
		var closeModels func()
		models, name, closeModels, err = d.evalModels(ctx, cfg)
		if err != nil {
			return err
		}
		defer closeModels()
	}

	opts := eval.Options{
		Model: models, Replays: replays, ModelName: name,
		Parallel: o.parallel, Repeat: o.repeat, Loop: cfg.Loop(),
		Filter: filter, Out: o.out,
		Now: d.now, Sleep: d.sleep,
		Config: eval.Config{Suites: specs, Filter: o.filter, Endpoint: cfg.Endpoint, Replay: o.replay},
	}
	opts.Progress = newEvalProgress(d.stderr, d.isTerminal(d.stderr))
	res, runErr := eval.Run(ctx, suites, opts)
	if res == nil {
		return runErr
	}
	// A stopped evaluation still writes what it did (and then exits 1).
	if o.out != "" {
		if err := writeEvalOut(o.out, res); err != nil {
			return err
		}
	}
	if o.json {
		if err := res.WriteJSON(d.jsonOut()); err != nil {
			return err
		}
	} else {
		eval.WriteSummary(d.stdout, res)
		if o.out != "" {
			fmt.Fprintf(d.stdout, "wrote %s and %s\n", filepath.Join(o.out, "results.json"), filepath.Join(o.out, "report.html"))
		}
	}
	return runErr
}

// writeEvalOut writes results.json and report.html into dir.
func writeEvalOut(dir string, res *eval.Results) error {
	write := func(name string, f func(io.Writer) error) error {
		path := filepath.Join(dir, name)
		fh, err := os.Create(path)
		if err != nil {
			return err
		}
		if err := f(fh); err != nil {
			fh.Close()
			return fmt.Errorf("%s: %w", path, err)
		}
		return fh.Close()
	}
	if err := write("results.json", res.WriteJSON); err != nil {
		return err
	}
	return write("report.html", func(w io.Writer) error { return eval.WriteHTML(w, res) })
}

// evalModels returns how each run gets its backend: scripts are opened
// fresh per run (a script plays from its first turn); a model file or a
// server is opened once and shared.
func (d *deps) evalModels(ctx context.Context, cfg *config.Config) (eval.ModelFunc, string, func(), error) {
	if rest, ok := strings.CutPrefix(cfg.Model, "script:"); ok && (cfg.Endpoint == "" || cfg.Sources["model"].Origin > cfg.Sources["endpoint"].Origin) {
		f, err := eval.ScriptModels(rest, script.Options{Sleep: d.sleep, Now: d.now})
		if err != nil {
			return nil, "", nil, err // the flag is fine; the file cannot be played
		}
		return f, "script:" + filepath.Base(strings.SplitN(rest, "?", 2)[0]), func() {}, nil
	}
	b, err := d.chooseModelFor(ctx, cfg)
	if err != nil {
		return nil, "", nil, err
	}
	closeFn := func() {
		if c, ok := b.(io.Closer); ok {
			c.Close()
		}
	}
	return func(context.Context, string, string, string) (model.Backend, func(), error) { return b, nil, nil }, b.Name(), closeFn, nil
}

// chooseModelFor opens a model file or a server, once, for every run.
// Failing to open it means the evaluation cannot run: exit 1.
func (d *deps) chooseModelFor(ctx context.Context, cfg *config.Config) (model.Backend, error) {
	if err := modelConflict(cfg); err != nil {
		return nil, err
	}
	b, err := d.chooseModel(ctx, cfg)
	var ee *exitError
	if errors.As(err, &ee) && ee.err != nil {
		// chooseModel's errors are usage errors for droidgo run; here the
		// flags were fine and the evaluation cannot run.
		return nil, ee.err
	}
	return b, err
}

// newEvalProgress reports progress on w: one self-overwriting line on a
// terminal (tty), plain lines otherwise.
func newEvalProgress(w io.Writer, tty bool) func(eval.Progress) {
	return func(p eval.Progress) {
		eta := p.ETA().Round(time.Second)
		last := printableLine(p.Last, 100)
		if tty {
			fmt.Fprintf(w, "\r\x1b[K%d/%d · %.0f%% success · ETA %s · %s", p.Done, p.Total, 100*p.Rate(), eta, last)
			if p.Done == p.Total {
				fmt.Fprintln(w)
			}
			return
		}
		fmt.Fprintf(w, "[%d/%d] %s (%.0f%% so far, ETA %s)\n", p.Done, p.Total, last, 100*p.Rate(), eta)
	}
}

// printableLine is s on one line safe for the terminal (the text may come
// from a model: termsafe.Line), shortened to n runes.
func printableLine(s string, n int) string {
	s = termsafe.Line(s)
	if rs := []rune(s); len(rs) > n {
		s = string(rs[:n-1]) + "…"
	}
	return s
}

func newEvalCompareCmd(d *deps) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "compare A.json B.json",
		Short: "Compare two results.json files, with a paired test",
		Long: `Show two evaluations side by side: per task and decision, in total, the
ones whose outcome changed, and whether the difference is more than chance
(an exact McNemar test on the runs both files have).`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := eval.ReadResults(args[0])
			if err != nil {
				return err
			}
			b, err := eval.ReadResults(args[1])
			if err != nil {
				return err
			}
			cmp := eval.Compare(a, b)
			if asJSON {
				enc := json.NewEncoder(d.jsonOut())
				enc.SetIndent("", "  ")
				return enc.Encode(cmp)
			}
			cmp.WriteText(d.stdout)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the comparison as JSON")
	return c
}
