package main

import "github.com/spf13/cobra"

// Subcommands of the "model" and "sim" groups register here from their own
// files, like top-level commands do with register.
var (
	modelSubcommands []func(*globals) *cobra.Command
	simSubcommands   []func(*globals) *cobra.Command
)

func registerModel(f func(*globals) *cobra.Command) { modelSubcommands = append(modelSubcommands, f) }
func registerSim(f func(*globals) *cobra.Command)   { simSubcommands = append(simSubcommands, f) }

func init() {
	register(func(g *globals) *cobra.Command {
		c := &cobra.Command{
			Use:   "model",
			Short: "Inspect, run and benchmark model files (GGUF or HF directories)",
		}
		for _, f := range modelSubcommands {
			c.AddCommand(f(g))
		}
		return c
	})
	register(func(g *globals) *cobra.Command {
		c := &cobra.Command{
			Use:   "sim",
			Short: "Scripted simulated phones: list scenarios, serve one over ADB",
		}
		for _, f := range simSubcommands {
			c.AddCommand(f(g))
		}
		return c
	})
}
