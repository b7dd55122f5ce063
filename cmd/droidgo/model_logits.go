package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/droidgo/droidgo/model/spark"
)

func init() { registerModel(newModelLogitsCmd) }

// engineFlags are the engine options shared by logits and generate.
type engineFlags struct {
	threads    int
	gelu       string
	floatActs  bool
	batch      int
	tokens     string
	jsonOutput bool
}

func (ef *engineFlags) add(c *cobra.Command) {
	f := c.Flags()
	f.StringVar(&ef.tokens, "tokens", "", "comma-separated token ids, e.g. 0,5,7")
	f.IntVar(&ef.threads, "threads", 0, "threads for matrix products (0 = all CPUs)")
	f.StringVar(&ef.gelu, "gelu", "erf", "GELU: erf (reference), tanh, or table (llama.cpp's fp16 table)")
	f.BoolVar(&ef.floatActs, "float-activations", false, "use unrounded float32 activations instead of llama.cpp's per-type rounding")
	f.IntVar(&ef.batch, "batch", 64, "prefill chunk size")
	f.BoolVar(&ef.jsonOutput, "json", false, "print JSON")
}

func parseModelTokens(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("--tokens is required (comma-separated token ids)")
	}
	var out []int
	for _, p := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || v < 0 {
			return nil, fmt.Errorf("--tokens: %q is not a token id", p)
		}
		out = append(out, v)
	}
	return out, nil
}

// openEngine validates the flags and loads the model.
func (ef *engineFlags) open(path string) (*spark.Engine, []int, error) {
	toks, err := parseModelTokens(ef.tokens)
	if err != nil {
		return nil, nil, usageErr(err)
	}
	gm, ok := spark.ParseGELU(ef.gelu)
	if !ok {
		return nil, nil, usageErr(fmt.Errorf("--gelu must be erf, tanh or table, not %q", ef.gelu))
	}
	if ef.threads < 0 || ef.batch < 0 {
		return nil, nil, usageErr(fmt.Errorf("--threads and --batch must not be negative"))
	}
	m, err := spark.Open(path)
	if err != nil {
		return nil, nil, err
	}
	for _, t := range toks {
		if t >= m.Config.Vocab {
			m.Close()
			return nil, nil, fmt.Errorf("token id %d is out of range for a vocabulary of %d", t, m.Config.Vocab)
		}
	}
	e, err := spark.NewEngine(m, spark.Options{Threads: ef.threads, GELU: gm, FloatActivations: ef.floatActs, Batch: ef.batch})
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	return e, toks, nil
}

// modelJSONFloats marshals float32s with the shortest exact representation.
type modelJSONFloats []float32

func (f modelJSONFloats) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, len(f)*12+2)
	b = append(b, '[')
	for i, v := range f {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, float64(v), 'g', -1, 32)
	}
	return append(b, ']'), nil
}

func newModelLogitsCmd(g *globals) *cobra.Command {
	var ef engineFlags
	var all bool
	c := &cobra.Command{
		Use:   "logits FILE|DIR --tokens 0,5,7 [--all-positions] [--threads N] [--json]",
		Short: "Print the logits of the last (or every) position for a token sequence",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, toks, err := ef.open(args[0])
			if err != nil {
				return err
			}
			defer e.Model().Close()
			mode := spark.LogitsLast
			if all {
				mode = spark.LogitsAll
			}
			logits, err := e.Eval(g.ctx, toks, mode)
			if err != nil {
				return err
			}
			V := e.Model().Config.Vocab
			if ef.jsonOutput {
				out := struct {
					NVocab  int `json:"n_vocab"`
					NTokens int `json:"n_tokens"`
					Logits  any `json:"logits"`
				}{V, len(toks), modelJSONFloats(logits)}
				if all {
					rows := make([]modelJSONFloats, len(toks))
					for i := range rows {
						rows[i] = logits[i*V : (i+1)*V]
					}
					out.Logits = rows
				}
				enc := json.NewEncoder(g.stdout)
				return enc.Encode(out)
			}
			first := 0
			if !all {
				first = len(toks) - 1
			}
			fmt.Fprintf(g.stdout, "n_vocab %d, n_tokens %d\n", V, len(toks))
			for i := 0; i*V < len(logits); i++ {
				row := logits[i*V : (i+1)*V]
				fmt.Fprintf(g.stdout, "position %d (token %d): top %s\n", first+i, toks[first+i], modelTopK(row, 5))
			}
			return nil
		},
	}
	ef.add(c)
	c.Flags().BoolVar(&all, "all-positions", false, "logits of every position, not just the last")
	return c
}

func modelTopK(row []float32, k int) string {
	idx := make([]int, len(row))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return row[idx[a]] > row[idx[b]] })
	var sb strings.Builder
	for i := 0; i < k && i < len(idx); i++ {
		if i > 0 {
			sb.WriteString(" ")
		}
		fmt.Fprintf(&sb, "%d:%.4f", idx[i], row[idx[i]])
	}
	return sb.String()
}
