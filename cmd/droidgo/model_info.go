package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/droidgo/droidgo/internal/termsafe"
	"github.com/droidgo/droidgo/model/spark"
)

type modelTensorJSON struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Dims  []int  `json:"dims"`
	Bytes int64  `json:"bytes"`
}

type modelInfoJSON struct {
	Path         string            `json:"path"`
	Format       string            `json:"format"`
	Architecture string            `json:"architecture"`
	Config       spark.Config      `json:"config"`
	Params       int64             `json:"n_params"`
	WeightBytes  int64             `json:"weight_bytes"`
	TensorTypes  map[string]int    `json:"tensor_types"`
	Tensors      []modelTensorJSON `json:"tensors"`
	Ctx          int               `json:"ctx"`
	KVBytes      int64             `json:"kv_cache_bytes"`
	KVType       string            `json:"kv_type"`
	KVByType     map[string]int64  `json:"kv_cache_bytes_by_type"`
	ScratchBytes int64             `json:"scratch_bytes"`
	MemoryBytes  int64             `json:"memory_estimate_bytes"`
}

// maxInfoCtx bounds --ctx for a model that states no context length:
// 2^24 positions keeps every byte count far from overflowing.
const maxInfoCtx = 1 << 24

func newModelInfoCmd(d *deps) *cobra.Command {
	var asJSON bool
	var ctxLen int
	c := &cobra.Command{
		Use:   "info FILE|DIR [--json] [--ctx N]",
		Short: "Show a model's architecture, shapes, tensor types and memory needs",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if ctxLen <= 0 {
				return usageErr(fmt.Errorf("--ctx must be positive"))
			}
			m, err := openSpark(args[0])
			if err != nil {
				return err
			}
			defer m.Close()
			cfg := m.Config
			// The estimate is for a context the model can hold; a larger
			// one is a mistake (and a huge one would overflow the sums).
			if cfg.Context > 0 && ctxLen > cfg.Context && !cmd.Flags().Changed("ctx") {
				ctxLen = cfg.Context // the default, for a model with a short context
			}
			if cfg.Context > 0 && ctxLen > cfg.Context {
				return usageErr(fmt.Errorf("--ctx %d exceeds the model's context length of %d", ctxLen, cfg.Context))
			}
			if ctxLen > maxInfoCtx {
				return usageErr(fmt.Errorf("--ctx %d is more than the %d droidgo can estimate", ctxLen, maxInfoCtx))
			}
			info := modelInfoJSON{Path: args[0], Format: m.Format, Architecture: spark.Arch, Config: cfg,
				TensorTypes: map[string]int{}, Ctx: ctxLen, WeightBytes: m.WeightBytes()}
			for _, t := range m.Tensors() {
				n := int64(1)
				for _, dim := range t.Dims {
					n *= int64(dim)
				}
				info.Params += n
				info.TensorTypes[t.Type.String()]++
				info.Tensors = append(info.Tensors, modelTensorJSON{t.Name, t.Type.String(), t.Dims, t.Bytes})
			}
			info.KVBytes = cfg.KVBytes(ctxLen)
			info.KVType = spark.KVF16.String()
			info.KVByType = map[string]int64{}
			for _, t := range []spark.KVType{spark.KVF16, spark.KVF32} {
				info.KVByType[t.String()] = cfg.KVBytesOf(ctxLen, t)
			}
			info.ScratchBytes = spark.ScratchBytes(cfg, 64)
			info.MemoryBytes = info.WeightBytes + info.KVBytes + info.ScratchBytes
			if asJSON {
				return json.NewEncoder(d.jsonOut()).Encode(info)
			}
			w := termsafe.NewWriter(d.stdout) // names and types come from the file
			fmt.Fprintf(w, "%s: %s (%s)\n", args[0], spark.Arch, m.Format)
			fmt.Fprintf(w, "layers %d (%d sliding, window %d), hidden %d, ffn %d, heads %d/%d kv, head_dim %d, vocab %d, context %d\n",
				cfg.Layers, modelCountTrue(cfg.Sliding), cfg.Window, cfg.Hidden, cfg.FFN, cfg.Heads, cfg.KVHeads, cfg.HeadDim, cfg.Vocab, cfg.Context)
			fmt.Fprintf(w, "rope: full theta %g over %d dims, sliding theta %g over %d dims; rms eps %g\n",
				cfg.RopeThetaFull, cfg.RopeDimsFull, cfg.RopeThetaSWA, cfg.RopeDimsSWA, float32(cfg.Eps))
			types := make([]string, 0, len(info.TensorTypes))
			for t := range info.TensorTypes {
				types = append(types, t)
			}
			sort.Strings(types)
			fmt.Fprintf(w, "parameters %d, %d tensors:", info.Params, len(info.Tensors))
			for _, t := range types {
				fmt.Fprintf(w, " %s x%d", t, info.TensorTypes[t])
			}
			fmt.Fprintln(w)
			fmt.Fprintf(w, "memory at context %d: weights %s (mapped) + KV cache %s (f16) + scratch %s = %s\n",
				ctxLen, modelHuman(info.WeightBytes), modelHuman(info.KVBytes), modelHuman(info.ScratchBytes), modelHuman(info.MemoryBytes))
			var per []string
			for _, n := range []int{2048, 4096, 8192, 32768} {
				per = append(per, fmt.Sprintf("%d: f16 %s, f32 %s", n, modelHuman(cfg.KVBytesOf(n, spark.KVF16)), modelHuman(cfg.KVBytesOf(n, spark.KVF32))))
			}
			fmt.Fprintf(w, "KV cache by context: %s\n", strings.Join(per, "; "))
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.Flags().IntVar(&ctxLen, "ctx", 4096, "context length for the memory estimate (at most the model's; the default is cut to it)")
	return c
}

func modelCountTrue(b []bool) int {
	n := 0
	for _, v := range b {
		if v {
			n++
		}
	}
	return n
}

func modelHuman(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
