package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"time"

	"github.com/spf13/cobra"

	"github.com/droidgo/droidgo/internal/cpuset"
	"github.com/droidgo/droidgo/internal/termsafe"
	"github.com/droidgo/droidgo/model"
	"github.com/droidgo/droidgo/model/kernels"
	"github.com/droidgo/droidgo/model/spark"
	"github.com/droidgo/droidgo/model/weightcache"
)

// benchResult is the --json output of model bench; the field names follow
// llama-bench so bench/peer.sh can put both side by side.
type benchResult struct {
	NPrompt int `json:"n_prompt"`
	NGen    int `json:"n_gen"`
	NDepth  int `json:"n_depth,omitempty"` // -d, only when given
	Threads int `json:"threads"`
	// CPUs are the CPUs the threads were pinned to ([]: not pinned);
	// Cores says where they ran in words (cpuset.Placement.What).
	CPUs    []int   `json:"cpus"`
	Cores   string  `json:"cores"`
	PPTPS   float64 `json:"pp_tps"`
	TGTPS   float64 `json:"tg_tps"`
	PPSD    float64 `json:"pp_sd"`
	TGSD    float64 `json:"tg_sd"`
	LoadS   float64 `json:"load_s"`
	RSSMB   float64 `json:"rss_mb"`
	Kernels string  `json:"kernels"` // the kernel level that ran (kernels.ISA)
}

// modelBenchOptions are the inputs of `droidgo model bench`.
type modelBenchOptions struct {
	d    *deps
	path string // the model file

	nPrompt, nGen, depth, reps, batch int
	cores                             coreFlags
	json, preload, repack, wcache     bool
	gelu, cpuProfile, parallel        string
	seed                              uint64

	// Read from the flags by check.
	geluMode spark.GELUMode
	counts   []int // --parallel's sequence counts; nil: one sequence
}

func newModelBenchCmd(d *deps) *cobra.Command {
	o := &modelBenchOptions{d: d}
	c := &cobra.Command{
		Use:   "bench FILE [-p 512] [-n 128] [-t N] [-r 3] [--parallel 1,2,4,8] [--json]",
		Short: "Measure prefill and decode speed of the in-process engine (like llama-bench)",
		Long: `bench loads a GGUF model and measures, like llama-bench, prompt processing
(pp: -p random tokens in one Eval from an empty cache) and text generation
(tg: -n single-token Evals from an empty cache), each after one untimed
warm-up and then -r timed repetitions with a cleared cache. It prints tokens
per second (mean and standard deviation over the repetitions), the load time
(open + engine set-up: the model can answer from then on) and the peak
resident memory (getrusage ru_maxrss, which includes the mapped model pages
that were touched).

By default the Q4_K, Q6_K and Q8_0 matrices the CPU has interleaved kernels
for are put into 8-row groups in the background after loading, as the agent
does (--repack=false keeps the file's layout); the timed tests start once
that is done.

--json prints exactly one object:
{"n_prompt":512,"n_gen":128,"threads":2,"cpus":[4,5,6,7],"cores":"..","pp_tps":..,"tg_tps":..,"pp_sd":..,"tg_sd":..,"load_s":..,"rss_mb":..,"kernels":".."}
-p 0 or -n 0 skips that test (its figures are then 0).

-d N runs both tests after N tokens of context, as llama-bench's -d does
(an agent decodes at 2,000-3,000 positions, where attention reads the
cache of all of them): N random tokens are prefilled once, untimed, and
the cache is restored to them before every run; the JSON object then
also has "n_depth":N.

The engine runs on the fastest cores, one thread each, its threads pinned to
them where the machine has slower ones (phones, Intel P+E): "cores" says which
and "cpus" lists the CPUs the threads were pinned to ([] when they were not).
-t and --cpus override that.

--parallel 1,2,4,8 measures many sequences decoded together instead (like
llama-batched-bench): for each count N, N sequences each get a -p token
prompt (one after the other, in chunks), then -n passes decode one token of
every sequence at once. It reports per count the prompt tokens per second,
the decoded tokens per second summed over the sequences and per sequence,
and the resident memory after the count (the means over -r repetitions
after an untimed one). --json then prints exactly
{"model":"..","threads":2,"parallel":[{"sequences":8,"pp_tps":..,"tg_tps":..,"tg_tps_per_sequence":..,"rss_mb":..},..]}`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.path = args[0]
			return runModelBench(o)
		},
	}
	f := c.Flags()
	f.IntVarP(&o.nPrompt, "n-prompt", "p", 512, "prompt tokens for the prefill test (0: skip)")
	f.IntVarP(&o.nGen, "n-gen", "n", 128, "tokens for the decode test (0: skip)")
	f.IntVarP(&o.depth, "n-depth", "d", 0, "tokens of context before each test (prefilled once, untimed)")
	o.cores.add(f)
	f.IntVarP(&o.reps, "repetitions", "r", 3, "timed repetitions of each test")
	f.IntVar(&o.batch, "batch", 0, "prefill chunk: tokens per pass through the layers (0: 512 at the amx level, 256 with other matrix-matrix kernels, else 64)")
	f.BoolVar(&o.json, "json", false, "print one JSON object")
	f.BoolVar(&o.preload, "preload", false, "copy the weights into anonymous (huge-page) memory at load instead of reading the file mapping (no repacking)")
	f.BoolVar(&o.repack, "repack", true, "interleave the Q4_K, Q6_K and Q8_0 matrices into 8-row groups in the background after loading, for the faster kernels (the timed tests wait for it)")
	f.BoolVar(&o.wcache, "weights-cache", true, "with --repack, map the interleaved weights from the weights cache ($XDG_CACHE_HOME/droidgo/weights) when it has them, and keep them there when not")
	f.StringVar(&o.gelu, "gelu", "table", "GELU: table (llama.cpp's), tanh or erf")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the timed tests to this file (-p 0 or -n 0 to profile one)")
	f.Uint64Var(&o.seed, "seed", 1, "seed of the random token ids")
	f.StringVar(&o.parallel, "parallel", "", "measure `N,N,..` sequences decoded together (e.g. 1,2,4,8,16,32) instead of one")
	return c
}

// check refuses flags out of their ranges (usage errors) and reads
// --gelu and --parallel.
func (o *modelBenchOptions) check() error {
	if o.nPrompt < 0 || o.nGen < 0 || o.depth < 0 || o.reps < 1 {
		return usageErr(fmt.Errorf("-p, -n and -d must be >= 0, -r >= 1"))
	}
	if err := checkBatch(o.batch); err != nil {
		return err
	}
	if o.nPrompt == 0 && o.nGen == 0 {
		return usageErr(fmt.Errorf("nothing to measure: -p and -n are both 0"))
	}
	if o.parallel != "" {
		var err error
		if o.counts, err = parseCounts(o.parallel); err != nil {
			return usageErr(err)
		}
		if o.nGen == 0 {
			return usageErr(fmt.Errorf("--parallel measures decoding: -n must be > 0"))
		}
		if o.depth > 0 {
			return usageErr(fmt.Errorf("-d applies to the one-sequence tests, not --parallel"))
		}
	}
	var ok bool
	if o.geluMode, ok = spark.ParseGELU(o.gelu); !ok {
		return usageErr(fmt.Errorf("--gelu must be erf, tanh or table, not %q", o.gelu))
	}
	return nil
}

// note prints a line of progress on stderr, unless the output is JSON.
func (o *modelBenchOptions) note(format string, args ...any) {
	if !o.json {
		fmt.Fprintf(o.d.stderr, format+"\n", args...)
	}
}

func runModelBench(o *modelBenchOptions) error {
	d := o.d
	if err := o.check(); err != nil {
		return err
	}
	place, err := o.cores.place()
	if err != nil {
		return err
	}
	start := time.Now()
	m, err := spark.Open(o.path)
	if err != nil {
		return err
	}
	defer m.Close()
	var repacking int64
	switch {
	case o.preload:
		if _, err := m.Preload(); err != nil {
			return err
		}
	case o.repack:
		var cache *weightcache.Cache
		if o.wcache {
			cache = &weightcache.Cache{Dir: weightcache.Dir(d.getenv), Warn: func(s string) { fmt.Fprintf(d.stderr, "droidgo: warning: %s\n", s) }}
		}
		if repacking, err = m.StartRepack(cache); err != nil {
			return err
		}
	}
	// Every position is cache memory: flags asking for more than the
	// model was made for are refused, not run out of memory. (Each is
	// compared alone first, so their sum cannot overflow.)
	limit := m.Config.MaxPositions()
	over := o.depth > limit || o.nPrompt > limit || o.nGen > limit
	if !over {
		need := o.depth + max(o.nPrompt, o.nGen)
		if o.counts != nil {
			need = o.nPrompt + o.nGen
		}
		over = need > limit
	}
	if over {
		return usageErr(fmt.Errorf("-d %d, -p %d and -n %d need more positions than the model's context of %d", o.depth, o.nPrompt, o.nGen, limit))
	}
	maxCtx := o.depth + max(o.nPrompt, o.nGen) + 1
	if o.counts != nil {
		maxCtx = o.nPrompt + o.nGen + 1
	}
	e, err := spark.NewEngine(m, spark.Options{Threads: place.Threads, CPUs: place.CPUs, GELU: o.geluMode, Batch: o.batch, MaxContext: maxCtx})
	if err != nil {
		return fmt.Errorf("start engine: %w", err)
	}
	defer e.Close()
	load := time.Since(start)
	rng := rand.New(rand.NewPCG(o.seed, 1))
	o.note("model %s: %d layers, vocab %d; %s; loaded in %.3f s", o.path, m.Config.Layers, m.Config.Vocab,
		model.Engine{Threads: e.Threads(), Cores: place.What, Kernels: kernels.ISA()}, load.Seconds())
	if err := e.PinError(); err != nil {
		fmt.Fprintf(d.stderr, "droidgo: warning: the engine's threads could not be pinned to CPUs %s: %v\n", cpuset.FormatList(place.CPUs), err)
	}
	// Load to first token: one decode step right after loading, while the
	// background repack (if any) still runs.
	ctx := d.ctx
	t0 := time.Now()
	logits, err := e.EvalTo(ctx, randTokens(rng, m.Config.Vocab, 1), spark.LogitsLast, nil)
	if err != nil {
		return err
	}
	o.note("first token %.3f s after the start", (load + time.Since(t0)).Seconds())
	// The timed tests measure the model as it runs once the background
	// repack is done (1-3 s for a 1.1 GB file).
	if err := m.WaitRepack(ctx); err != nil {
		return err
	}
	if _, took := m.RepackStats(); repacking > 0 {
		if p := m.RepackCached(); p != "" {
			o.note("mapped %.0f MB of weights (the interleaved layouts) from the weights cache, %s", float64(repacking)/1e6, termsafe.Line(p))
		} else {
			o.note("moved %.0f MB of weights (the interleaved layouts) in the background in %.2f s", float64(repacking)/1e6, took.Seconds())
		}
	}
	var at *spark.State // the -d context every run starts from
	if o.depth > 0 {
		t0 := time.Now()
		e.Reset()
		if err := e.Prefill(ctx, randTokens(rng, m.Config.Vocab, o.depth)); err != nil {
			return fmt.Errorf("depth: %w", err)
		}
		at = e.Save()
		o.note("context of %d tokens prefilled in %.2f s", o.depth, time.Since(t0).Seconds())
	}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	if o.counts != nil {
		// Progress goes to stderr with --json too: a sweep to 32
		// sequences runs for many minutes.
		res, err := benchParallel(ctx, e, o.counts, o.nPrompt, o.nGen, o.reps, rng, func(line string) { fmt.Fprintln(d.stderr, line) })
		if err != nil {
			return err
		}
		return printParallel(d, o.json, o.path, e.Threads(), res)
	}
	res := benchResult{NPrompt: o.nPrompt, NGen: o.nGen, NDepth: o.depth, Threads: e.Threads(), CPUs: append([]int{}, e.CPUs()...), Cores: place.What, LoadS: load.Seconds(), Kernels: kernels.ISA()}
	if err := o.single(ctx, e, at, rng, logits, &res); err != nil {
		return err
	}
	if o.json {
		return json.NewEncoder(d.jsonOut()).Encode(res)
	}
	fmt.Fprintf(d.stdout, "| model | threads | test | t/s |\n|---|---|---|---|\n")
	depth := ""
	if o.depth > 0 {
		depth = fmt.Sprintf(" @ d%d", o.depth) // llama-bench's name for it
	}
	if o.nPrompt > 0 {
		fmt.Fprintf(d.stdout, "| %s | %d | pp%d%s | %.2f ± %.2f |\n", o.path, res.Threads, o.nPrompt, depth, res.PPTPS, res.PPSD)
	}
	if o.nGen > 0 {
		fmt.Fprintf(d.stdout, "| %s | %d | tg%d%s | %.2f ± %.2f |\n", o.path, res.Threads, o.nGen, depth, res.TGTPS, res.TGSD)
	}
	fmt.Fprintf(d.stdout, "load %.3f s, peak RSS %.0f MB\n", res.LoadS, res.RSSMB)
	return nil
}

// single measures one sequence, as llama-bench does: prefill of -p random
// tokens from an empty cache, or from the -d context at (pp), and -n
// one-token decode steps (tg), each after an untimed warm-up, -r times.
func (o *modelBenchOptions) single(ctx context.Context, e *spark.Engine, at *spark.State, rng *rand.Rand, logits []float32, res *benchResult) error {
	V := e.Model().Config.Vocab
	// start empties the cache, or restores the -d context.
	start := func() error {
		if at == nil {
			e.Reset()
			return nil
		}
		return e.Restore(at)
	}
	pp := func() (float64, error) {
		if err := start(); err != nil {
			return 0, err
		}
		toks := randTokens(rng, V, o.nPrompt)
		t0 := time.Now()
		var err error
		logits, err = e.EvalTo(ctx, toks, spark.LogitsLast, logits)
		return float64(o.nPrompt) / time.Since(t0).Seconds(), err
	}
	tg := func() (float64, error) {
		if err := start(); err != nil {
			return 0, err
		}
		toks := randTokens(rng, V, o.nGen)
		t0 := time.Now()
		for _, tok := range toks {
			var err error
			if logits, err = e.EvalTo(ctx, []int{tok}, spark.LogitsLast, logits); err != nil {
				return 0, err
			}
		}
		return float64(o.nGen) / time.Since(t0).Seconds(), nil
	}
	var err error
	if res.PPTPS, res.PPSD, err = o.measure("pp", o.nPrompt, pp); err != nil {
		return err
	}
	if res.TGTPS, res.TGSD, err = o.measure("tg", o.nGen, tg); err != nil {
		return err
	}
	res.RSSMB = peakRSSMB()
	return nil
}

// measure runs f once untimed, then -r times, and returns the mean and
// standard deviation of its rates (0, 0 for a test of n = 0 tokens).
func (o *modelBenchOptions) measure(name string, n int, f func() (float64, error)) (mean, sd float64, err error) {
	if n == 0 {
		return 0, 0, nil
	}
	if _, err := f(); err != nil { // warm-up
		return 0, 0, fmt.Errorf("%s warm-up: %w", name, err)
	}
	var xs []float64
	for i := 0; i < o.reps; i++ {
		v, err := f()
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", name, err)
		}
		xs = append(xs, v)
		o.note("  %s%d rep %d: %.2f tok/s", name, n, i+1, v)
	}
	mean, sd = meanSD(xs)
	return mean, sd, nil
}

// randTokens returns n random token ids below vocab.
func randTokens(rng *rand.Rand, vocab, n int) []int {
	t := make([]int, n)
	for i := range t {
		t[i] = rng.IntN(vocab)
	}
	return t
}

func meanSD(xs []float64) (mean, sd float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	for _, x := range xs {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(xs)-1))
}
