package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/droidgo/droidgo/config"
	"github.com/droidgo/droidgo/internal/termsafe"
)

func newConfigCmd(d *deps) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "config",
		Short: "Show the effective settings and where each came from",
		Long: `Show droidgo's effective settings: built-in defaults, overridden by the
configuration file, overridden by environment variables (flags override all
three when a command runs). The file is $XDG_CONFIG_HOME/droidgo/config.toml
(or DROIDGO_CONFIG), for example:

    model = "/models/Spark-X2.5-1.7B-Q4_K_M.gguf"
    max_steps = 30
    think_budget = 768
    sensitive = ["Pay", "Buy", "Send", "Delete", "Transfer"]`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := config.Load(d.getenv)
			if err != nil {
				return usageErr(err)
			}
			if asJSON {
				type entry struct {
					Key    string `json:"key"`
					Value  string `json:"value"`
					Source string `json:"source"`
					Env    string `json:"env"`
				}
				out := struct {
					File     string  `json:"file"`
					Settings []entry `json:"settings"`
				}{File: cfg.Path}
				for _, k := range config.Keys {
					out.Settings = append(out.Settings, entry{k.Name, cfg.Value(k.Name), cfg.Sources[k.Name].String(), k.Env})
				}
				return json.NewEncoder(d.jsonOut()).Encode(out)
			}
			fmt.Fprintf(termsafe.NewWriter(d.stdout), "configuration file: %s\n\n", cfg.Path)
			tw := tabwriter.NewWriter(termsafe.NewWriter(d.stdout), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SETTING\tVALUE\tFROM\tENV")
			for _, k := range config.Keys {
				v := cfg.Value(k.Name)
				if v == "" {
					v = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", k.Name, v, cfg.Sources[k.Name], k.Env)
			}
			return tw.Flush()
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}
