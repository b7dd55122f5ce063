package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/droidgo/droidgo/model/spark"
)

// engineFlags are the engine options shared by logits and generate.
type engineFlags struct {
	cores      coreFlags
	gelu       string
	floatActs  bool
	batch      int
	tokens     string
	jsonOutput bool
}

func (ef *engineFlags) add(c *cobra.Command) {
	f := c.Flags()
	f.StringVar(&ef.tokens, "tokens", "", "comma-separated token ids, e.g. 0,5,7")
	ef.cores.add(f)
	f.StringVar(&ef.gelu, "gelu", "erf", "GELU: erf (reference), tanh, or table (llama.cpp's fp16 table)")
	f.BoolVar(&ef.floatActs, "float-activations", false, "use unrounded float32 activations instead of llama.cpp's per-type rounding")
	f.IntVar(&ef.batch, "batch", 0, "prefill chunk size (0: the engine's default, 512 at the amx level, 256 with other matrix-matrix kernels, else 64)")
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
	place, err := ef.cores.place()
	if err != nil {
		return nil, nil, err
	}
	if err := checkBatch(ef.batch); err != nil {
		return nil, nil, err
	}
	m, err := openSpark(path)
	if err != nil {
		return nil, nil, err
	}
	for _, t := range toks {
		if t >= m.Config.Vocab {
			m.Close()
			return nil, nil, fmt.Errorf("token id %d is out of range for a vocabulary of %d", t, m.Config.Vocab)
		}
	}
	e, err := spark.NewEngine(m, spark.Options{Threads: place.Threads, CPUs: place.CPUs, GELU: gm, FloatActivations: ef.floatActs, Batch: ef.batch})
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	return e, toks, nil
}

// logitsJSON streams {"n_vocab":V,"n_tokens":T,"logits":...} row by row:
// one array of V numbers, or with all an array of T of them. Numbers are the
// shortest text that reads back as the same float32. JSON has no NaN or
// infinity, so such values are written as null and counted so the caller
// can warn. Rows go out through a buffer as they are computed, never as one
// string: 131072 logits times hundreds of positions is hundreds of
// megabytes of text.
type logitsJSON struct {
	w         *bufio.Writer
	all       bool
	rows      int
	nonFinite int
	num       []byte
}

func newLogitsJSON(w io.Writer, V, T int, all bool) *logitsJSON {
	j := &logitsJSON{w: bufio.NewWriterSize(w, 1<<20), all: all, num: make([]byte, 0, 32)}
	fmt.Fprintf(j.w, `{"n_vocab":%d,"n_tokens":%d,"logits":`, V, T)
	if all {
		j.w.WriteByte('[')
	}
	return j
}

func (j *logitsJSON) row(r []float32) {
	if j.rows > 0 {
		j.w.WriteByte(',')
	}
	j.rows++
	j.w.WriteByte('[')
	for i, v := range r {
		if i > 0 {
			j.w.WriteByte(',')
		}
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			j.nonFinite++
			j.w.WriteString("null")
			continue
		}
		j.num = strconv.AppendFloat(j.num[:0], float64(v), 'g', -1, 32)
		j.w.Write(j.num)
	}
	j.w.WriteByte(']')
}

// end closes the document and flushes it, reporting any write error.
func (j *logitsJSON) end() error {
	if j.all {
		j.w.WriteByte(']')
	}
	j.w.WriteString("}\n")
	return j.w.Flush()
}

// writeLogitsJSON writes logits (len(logits)/V rows) as one document.
func writeLogitsJSON(w io.Writer, V, T int, logits []float32, all bool) (nonFinite int, err error) {
	j := newLogitsJSON(w, V, T, all)
	for r := 0; r*V < len(logits); r++ {
		j.row(logits[r*V : (r+1)*V])
	}
	return j.nonFinite, j.end()
}

// logitsChunk is how many positions are evaluated per call with
// --all-positions, so memory stays at chunk*V floats however long the
// sequence is (the KV cache carries the context between calls).
func (ef *engineFlags) logitsChunk() int {
	if ef.batch <= 0 {
		return 64
	}
	return min(ef.batch, 256)
}

func newModelLogitsCmd(d *deps) *cobra.Command {
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
			V := e.Model().Config.Vocab
			var j *logitsJSON
			if ef.jsonOutput {
				j = newLogitsJSON(d.stdout, V, len(toks), all)
			} else {
				fmt.Fprintf(d.stdout, "n_vocab %d, n_tokens %d\n", V, len(toks))
			}
			emit := func(first int, logits []float32) {
				for i := 0; i*V < len(logits); i++ {
					row := logits[i*V : (i+1)*V]
					if j != nil {
						j.row(row)
					} else {
						fmt.Fprintf(d.stdout, "position %d (token %d): top %s\n", first+i, toks[first+i], modelTopK(row, 5))
					}
				}
			}
			if all {
				var buf []float32
				for start := 0; start < len(toks); start += ef.logitsChunk() {
					end := min(len(toks), start+ef.logitsChunk())
					if buf, err = e.EvalTo(d.ctx, toks[start:end], spark.LogitsAll, buf); err != nil {
						return err
					}
					emit(start, buf)
				}
			} else {
				logits, err := e.Eval(d.ctx, toks, spark.LogitsLast)
				if err != nil {
					return err
				}
				emit(len(toks)-1, logits)
			}
			if j == nil {
				return nil
			}
			if err := j.end(); err != nil {
				return fmt.Errorf("write logits: %w", err)
			}
			if j.nonFinite > 0 {
				fmt.Fprintf(d.stderr, "droidgo: warning: %d logits are NaN or infinite and were written as null\n", j.nonFinite)
			}
			return nil
		},
	}
	ef.add(c)
	c.Flags().BoolVar(&all, "all-positions", false, "logits of every position, not just the last")
	return c
}

// modelTopK formats the k largest logits of row, largest first (lowest id
// first on ties). It keeps a small sorted list instead of sorting the row,
// which matters with 131072 logits at every position.
func modelTopK(row []float32, k int) string {
	top := make([]int, 0, k+1)
	for i, v := range row {
		if len(top) == k && !(v > row[top[k-1]]) {
			continue
		}
		p := sort.Search(len(top), func(j int) bool { return v > row[top[j]] })
		top = slices.Insert(top, p, i)
		if len(top) > k {
			top = top[:k]
		}
	}
	var sb strings.Builder
	for i, id := range top {
		if i > 0 {
			sb.WriteString(" ")
		}
		fmt.Fprintf(&sb, "%d:%.4f", id, row[id])
	}
	return sb.String()
}
