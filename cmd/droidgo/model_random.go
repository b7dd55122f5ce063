package main

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/droidgo/droidgo/model/spark"
)

func newModelRandomCmd(d *deps) *cobra.Command {
	var (
		size, typ, out, format string
		seed                   uint64
		context                int
	)
	c := &cobra.Command{
		Use:   "make-random --arch-size tiny|1.7b --type f32|f16|bf16|q8_0|q4_k_m --out FILE [--seed S]",
		Short: "Write a random-weight Spark model (GGUF file or HF directory) for tests and benchmarks",
		Long: `make-random writes a Spark-X2.5 model with random weights and a synthetic tokenizer.
--arch-size picks the shape: 1.7b and 4b are the real shapes; tiny (the llama.cpp peer
toolkit's preset), gqa and q are small test shapes. --type picks the weight storage
(f32, f16, bf16, q8_0, q4_0, q4_k, q5_k, q6_k or q4_k_m, llama.cpp's Q4_K_M mix).
--format hf writes a directory with config.json and model.safetensors (bf16) instead.
The same seed gives the same underlying values in every type and format.
The file carries Spark's special tokens (<think>, <tool_call>, <arg_key>, ...,
<｜end▁of▁sentence｜>) and chat template, so 'droidgo run' and 'droidgo eval' run
on it end to end (with garbage decisions): a smoke test of the in-process path.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, ok := spark.Preset(size)
			if !ok {
				return usageErr(fmt.Errorf("unknown --arch-size %q (want one of %s)", size, strings.Join(modelPresetNames(), ", ")))
			}
			if out == "" {
				return usageErr(fmt.Errorf("--out is required"))
			}
			if context < 1 {
				return usageErr(fmt.Errorf("--context must be at least 1, not %d", context))
			}
			// The small presets declare 1024 positions, which the agent's
			// first prompt does not fit; a random model is for running the
			// agent too.
			if cmd.Flags().Changed("context") || cfg.Context < context {
				cfg.Context = context
			}
			start := time.Now()
			switch format {
			case "gguf":
				for _, t := range spark.RandomTensors(cfg) {
					if _, err := spark.TensorType(cfg, t, typ); err != nil {
						return usageErr(err)
					}
				}
				if err := spark.WriteRandomGGUF(out, cfg, typ, seed); err != nil {
					return fmt.Errorf("write %s: %w", out, err)
				}
			case "hf":
				if cmd.Flags().Changed("type") && typ != "bf16" {
					return usageErr(fmt.Errorf("--format hf writes bf16 only, not %q", typ))
				}
				if err := spark.WriteRandomHF(out, cfg, seed); err != nil {
					return fmt.Errorf("write %s: %w", out, err)
				}
			default:
				return usageErr(fmt.Errorf("unknown --format %q (want gguf or hf)", format))
			}
			fmt.Fprintf(d.stderr, "wrote %s (%s, %s) in %s\n", out, size, typ, time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&size, "arch-size", "tiny", "model shape: "+strings.Join(modelPresetNames(), ", "))
	f.StringVar(&typ, "type", "f32", "weight type: f32, f16, bf16, q8_0, q4_0, q4_k, q5_k, q6_k, q4_k_m")
	f.StringVar(&out, "out", "", "output GGUF file (or directory with --format hf)")
	f.StringVar(&format, "format", "gguf", "gguf or hf")
	f.Uint64Var(&seed, "seed", 1, "random seed")
	f.IntVar(&context, "context", 32768, "context length the file declares (at least this much for the small presets)")
	return c
}

func modelPresetNames() []string {
	n := []string{"tiny", "gqa", "q", "1.7b", "4b"}
	sort.Strings(n)
	return n
}
