package main

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"time"

	"github.com/spf13/cobra"

	"github.com/droidgo/droidgo/model/kernels"
	"github.com/droidgo/droidgo/model/spark"
)

// benchResult is the --json output of model bench; the field names follow
// llama-bench so bench/peer.sh can put both side by side.
type benchResult struct {
	NPrompt int     `json:"n_prompt"`
	NGen    int     `json:"n_gen"`
	Threads int     `json:"threads"`
	PPTPS   float64 `json:"pp_tps"`
	TGTPS   float64 `json:"tg_tps"`
	PPSD    float64 `json:"pp_sd"`
	TGSD    float64 `json:"tg_sd"`
	LoadS   float64 `json:"load_s"`
	RSSMB   float64 `json:"rss_mb"`
	Kernels string  `json:"kernels"` // the kernel level that ran (kernels.ISA)
}

func newModelBenchCmd(d *deps) *cobra.Command {
	var (
		nPrompt, nGen, threads, reps, batch int
		jsonOut, preload, repack            bool
		gelu, profile, parallel             string
		seed                                uint64
	)
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

By default the Q4_K and Q6_K matrices are interleaved into 8-row groups in
the background after loading, as the agent does (--repack=false keeps the
file's layout); the timed tests start once that is done.

--json prints exactly one object:
{"n_prompt":512,"n_gen":128,"threads":2,"pp_tps":..,"tg_tps":..,"pp_sd":..,"tg_sd":..,"load_s":..,"rss_mb":..}
-p 0 or -n 0 skips that test (its figures are then 0).

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
			if nPrompt < 0 || nGen < 0 || reps < 1 {
				return usageErr(fmt.Errorf("-p and -n must be >= 0, -r >= 1"))
			}
			if err := checkThreads(threads); err != nil {
				return err
			}
			if err := checkBatch(batch); err != nil {
				return err
			}
			if nPrompt == 0 && nGen == 0 {
				return usageErr(fmt.Errorf("nothing to measure: -p and -n are both 0"))
			}
			var counts []int
			if parallel != "" {
				var err error
				if counts, err = parseCounts(parallel); err != nil {
					return usageErr(err)
				}
				if nGen == 0 {
					return usageErr(fmt.Errorf("--parallel measures decoding: -n must be > 0"))
				}
			}
			gm, ok := spark.ParseGELU(gelu)
			if !ok {
				return usageErr(fmt.Errorf("--gelu must be erf, tanh or table, not %q", gelu))
			}
			start := time.Now()
			m, err := spark.Open(args[0])
			if err != nil {
				return err
			}
			defer m.Close()
			var repacking int64
			switch {
			case preload:
				if _, err := m.Preload(); err != nil {
					return err
				}
			case repack:
				if repacking, err = m.StartRepack(); err != nil {
					return err
				}
			}
			maxCtx := max(nPrompt, nGen) + 1
			if counts != nil {
				maxCtx = nPrompt + nGen + 1
			}
			e, err := spark.NewEngine(m, spark.Options{Threads: threads, GELU: gm, Batch: batch, MaxContext: maxCtx})
			if err != nil {
				return fmt.Errorf("start engine: %w", err)
			}
			defer e.Close()
			load := time.Since(start)
			res := benchResult{NPrompt: nPrompt, NGen: nGen, Threads: e.Threads(), LoadS: load.Seconds(), Kernels: kernels.ISA()}
			rng := rand.New(rand.NewPCG(seed, 1))
			V := m.Config.Vocab
			randToks := func(n int) []int {
				t := make([]int, n)
				for i := range t {
					t[i] = rng.IntN(V)
				}
				return t
			}
			if !jsonOut {
				fmt.Fprintf(d.stderr, "model %s: %d layers, vocab %d; %d threads, kernels %s; loaded in %.3f s\n",
					args[0], m.Config.Layers, V, e.Threads(), kernels.ISA(), load.Seconds())
			}
			// Load to first token: one decode step right after loading,
			// while the background repack (if any) still runs.
			ctx := d.ctx
			t0 := time.Now()
			logits, err := e.EvalTo(ctx, randToks(1), spark.LogitsLast, nil)
			if err != nil {
				return err
			}
			if !jsonOut {
				fmt.Fprintf(d.stderr, "first token %.3f s after the start\n", (load + time.Since(t0)).Seconds())
			}
			// The timed tests measure the model as it runs once the
			// background repack is done (1-3 s for a 1.1 GB file).
			if err := m.WaitRepack(ctx); err != nil {
				return err
			}
			if _, took := m.RepackStats(); repacking > 0 && !jsonOut {
				fmt.Fprintf(d.stderr, "moved %.0f MB of weights into huge pages in the background (the interleaved layouts) in %.2f s\n", float64(repacking)/1e6, took.Seconds())
			}
			if counts != nil {
				res, err := benchParallel(ctx, e, counts, nPrompt, nGen, reps, rng, func(line string) {
					if !jsonOut {
						fmt.Fprintln(d.stderr, line)
					}
				})
				if err != nil {
					return err
				}
				return printParallel(d, jsonOut, args[0], e.Threads(), res)
			}
			pp := func() (float64, error) {
				e.Reset()
				toks := randToks(nPrompt)
				t0 := time.Now()
				var err error
				logits, err = e.EvalTo(ctx, toks, spark.LogitsLast, logits)
				return float64(nPrompt) / time.Since(t0).Seconds(), err
			}
			tg := func() (float64, error) {
				e.Reset()
				toks := randToks(nGen)
				t0 := time.Now()
				for _, tok := range toks {
					var err error
					if logits, err = e.EvalTo(ctx, []int{tok}, spark.LogitsLast, logits); err != nil {
						return 0, err
					}
				}
				return float64(nGen) / time.Since(t0).Seconds(), nil
			}
			measure := func(name string, n int, f func() (float64, error)) (mean, sd float64, err error) {
				if n == 0 {
					return 0, 0, nil
				}
				if _, err := f(); err != nil { // warm-up
					return 0, 0, fmt.Errorf("%s warm-up: %w", name, err)
				}
				var xs []float64
				for i := 0; i < reps; i++ {
					v, err := f()
					if err != nil {
						return 0, 0, fmt.Errorf("%s: %w", name, err)
					}
					xs = append(xs, v)
					if !jsonOut {
						fmt.Fprintf(d.stderr, "  %s%d rep %d: %.2f tok/s\n", name, n, i+1, v)
					}
				}
				mean, sd = meanSD(xs)
				return mean, sd, nil
			}
			if profile != "" {
				f, err := os.Create(profile)
				if err != nil {
					return fmt.Errorf("cpu profile: %w", err)
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return fmt.Errorf("cpu profile: %w", err)
				}
				defer pprof.StopCPUProfile()
			}
			if res.PPTPS, res.PPSD, err = measure("pp", nPrompt, pp); err != nil {
				return err
			}
			if res.TGTPS, res.TGSD, err = measure("tg", nGen, tg); err != nil {
				return err
			}
			res.RSSMB = peakRSSMB()
			if jsonOut {
				b, _ := json.Marshal(res)
				fmt.Fprintln(d.jsonOut(), string(b))
				return nil
			}
			fmt.Fprintf(d.stdout, "| model | threads | test | t/s |\n|---|---|---|---|\n")
			if nPrompt > 0 {
				fmt.Fprintf(d.stdout, "| %s | %d | pp%d | %.2f ± %.2f |\n", args[0], res.Threads, nPrompt, res.PPTPS, res.PPSD)
			}
			if nGen > 0 {
				fmt.Fprintf(d.stdout, "| %s | %d | tg%d | %.2f ± %.2f |\n", args[0], res.Threads, nGen, res.TGTPS, res.TGSD)
			}
			fmt.Fprintf(d.stdout, "load %.3f s, peak RSS %.0f MB\n", res.LoadS, res.RSSMB)
			return nil
		},
	}
	f := c.Flags()
	f.IntVarP(&nPrompt, "n-prompt", "p", 512, "prompt tokens for the prefill test (0: skip)")
	f.IntVarP(&nGen, "n-gen", "n", 128, "tokens for the decode test (0: skip)")
	f.IntVarP(&threads, "threads", "t", 0, "engine threads (0: physical cores)")
	f.IntVarP(&reps, "repetitions", "r", 3, "timed repetitions of each test")
	f.IntVar(&batch, "batch", 0, "prefill chunk: tokens per pass through the layers (0: 256 with matrix-matrix kernels, else 64)")
	f.BoolVar(&jsonOut, "json", false, "print one JSON object")
	f.BoolVar(&preload, "preload", false, "copy the weights into anonymous (huge-page) memory at load instead of reading the file mapping (no repacking)")
	f.BoolVar(&repack, "repack", true, "interleave the Q4_K and Q6_K matrices into 8-row groups in the background after loading, for the faster kernels (the timed tests wait for it)")
	f.StringVar(&gelu, "gelu", "table", "GELU: table (llama.cpp's), tanh or erf")
	f.StringVar(&profile, "cpuprofile", "", "write a CPU profile of the timed tests to this file (-p 0 or -n 0 to profile one)")
	f.Uint64Var(&seed, "seed", 1, "seed of the random token ids")
	f.StringVar(&parallel, "parallel", "", "measure `N,N,..` sequences decoded together (e.g. 1,2,4,8,16,32) instead of one")
	return c
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
