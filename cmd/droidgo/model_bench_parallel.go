package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/droidgo/droidgo/model/spark"
)

// benchParallelJSON is model bench --parallel --json: exactly these fields.
type benchParallelJSON struct {
	Model    string               `json:"model"`
	Threads  int                  `json:"threads"`
	Parallel []benchParallelCount `json:"parallel"`
}

// benchParallelCount is one sequence count of model bench --parallel.
type benchParallelCount struct {
	Sequences int     `json:"sequences"`
	PPTPS     float64 `json:"pp_tps"` // prompt tokens per second, all prompts
	TGTPS     float64 `json:"tg_tps"` // generated tokens per second, summed over the sequences
	TGPerSeq  float64 `json:"tg_tps_per_sequence"`
	RSSMB     float64 `json:"rss_mb"`
}

// parseCounts parses --parallel's comma-separated sequence counts.
func parseCounts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > maxBenchSequences {
			return nil, fmt.Errorf("--parallel takes sequence counts between 1 and %d separated by commas, not %q", maxBenchSequences, s)
		}
		out = append(out, n)
	}
	return out, nil
}

// maxBenchSequences bounds --parallel's counts (each sequence holds its own
// KV cache).
const maxBenchSequences = 256

// benchParallel measures many sequences decoded together, as
// llama-batched-bench and the peer's `sparkpeer batched` do: for each count
// N, N sequences each get a random P-token prompt (one at a time, in
// chunks, as a server admits requests), then T passes in which every
// sequence decodes one token (one Engine.Step over all N). Each count runs
// reps times after one untimed warm-up pass, and the means are reported.
func benchParallel(ctx context.Context, e *spark.Engine, counts []int, nPrompt, nGen, reps int, rng *rand.Rand, report func(string)) ([]benchParallelCount, error) {
	V := e.Model().Config.Vocab
	randToks := func(n int) []int { return randTokens(rng, V, n) }
	var out []benchParallelCount
	for _, n := range counts {
		var pp, tg float64
		for rep := range reps + 1 {
			seqs := make([]*spark.Seq, n)
			for i := range seqs {
				seqs[i] = e.NewSeq()
			}
			works := make([]spark.Work, n)
			var ppTime, tgTime time.Duration
			t0 := time.Now()
			for i := range seqs {
				toks := randToks(nPrompt)
				for start := 0; start < len(toks); start += e.Batch() {
					end := min(len(toks), start+e.Batch())
					mode := spark.LogitsNone
					if end == len(toks) {
						mode = spark.LogitsLast
					}
					works[0] = spark.Work{Seq: seqs[i], Tokens: toks[start:end], Logits: mode, Out: works[0].Out}
					if err := step(ctx, e, works[:1]); err != nil {
						return nil, fmt.Errorf("%d sequences, prefill: %w", n, err)
					}
				}
			}
			ppTime = time.Since(t0)
			t0 = time.Now()
			for range nGen {
				for i := range works {
					works[i] = spark.Work{Seq: seqs[i], Tokens: []int{rng.IntN(V)}, Logits: spark.LogitsLast, Out: works[i].Out}
				}
				if err := step(ctx, e, works); err != nil {
					return nil, fmt.Errorf("%d sequences, decode: %w", n, err)
				}
			}
			tgTime = time.Since(t0)
			rss := currentRSSMB()
			for _, s := range seqs {
				s.Close()
			}
			if rep == 0 {
				continue // warm-up
			}
			p, g := rate(n*nPrompt, ppTime), rate(n*nGen, tgTime)
			pp += p / float64(reps)
			tg += g / float64(reps)
			report(fmt.Sprintf("  %d sequences rep %d: pp %.2f tok/s, tg %.2f tok/s (%.2f per sequence), RSS %.0f MB", n, rep, p, g, g/float64(n), rss))
			if rep == reps {
				out = append(out, benchParallelCount{Sequences: n, PPTPS: pp, TGTPS: tg, TGPerSeq: tg / float64(n), RSSMB: rss})
			}
		}
	}
	return out, nil
}

func step(ctx context.Context, e *spark.Engine, works []spark.Work) error {
	if err := e.Step(ctx, works); err != nil {
		return err
	}
	for i := range works {
		if works[i].Err != nil {
			return works[i].Err
		}
	}
	return nil
}

func rate(n int, d time.Duration) float64 {
	if n == 0 || d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// printParallel prints benchParallel's results as JSON or a table.
func printParallel(d *deps, jsonOut bool, model string, threads int, res []benchParallelCount) error {
	if jsonOut {
		return json.NewEncoder(d.jsonOut()).Encode(benchParallelJSON{Model: model, Threads: threads, Parallel: res})
	}
	fmt.Fprintf(d.stdout, "| model | threads | sequences | pp t/s | tg t/s | tg t/s per sequence | RSS MB |\n|---|---|---|---|---|---|---|\n")
	for _, r := range res {
		fmt.Fprintf(d.stdout, "| %s | %d | %d | %.2f | %.2f | %.2f | %.0f |\n", model, threads, r.Sequences, r.PPTPS, r.TGTPS, r.TGPerSeq, r.RSSMB)
	}
	return nil
}
