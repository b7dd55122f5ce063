package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/droidgo/droidgo/simulator"
)

func newSimListCmd(d *deps) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List the simulator's scenarios and their tasks",
		Long: `List the scripted phones droidgo ships: each scenario's name (for --sim and
'droidgo sim serve --scenario') and the task its success predicate checks.

With --json it prints one array of {"name", "task", "description"} objects.`,
		Example: "  droidgo sim list\n  droidgo run \"$(droidgo sim list --json | jq -r '.[] | select(.name == \"wifi\") | .task')\" --sim wifi --model script:fixtures/scripts/wifi.txt",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			infos, err := simulator.List()
			if err != nil {
				return err
			}
			if asJSON {
				if infos == nil {
					infos = []simulator.Info{}
				}
				enc := json.NewEncoder(d.jsonOut())
				enc.SetIndent("", "  ")
				enc.SetEscapeHTML(false)
				return enc.Encode(infos)
			}
			tw := tabwriter.NewWriter(d.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tTASK")
			for _, in := range infos {
				fmt.Fprintf(tw, "%s\t%s\n", in.Name, in.Task)
			}
			return tw.Flush()
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON: [{\"name\", \"task\", \"description\"}]")
	return c
}
