package main

import (
	"encoding/json"
	"fmt"
	"time"

	"charm.land/bubbles/v2/progress"
	"github.com/spf13/cobra"

	"github.com/droidgo/droidgo/internal/termsafe"
	"github.com/droidgo/droidgo/model/hub"
)

func newPullCmd(d *deps) *cobra.Command {
	return &cobra.Command{
		Use:   "pull [REPO[:QUANT]]",
		Short: "Download a Spark GGUF from the Hugging Face hub into the cache",
		Long: `Download a Spark GGUF from the Hugging Face hub (default ` + hub.DefaultRepo + `,
quantisation ` + hub.DefaultQuant + `) into droidgo's cache, resuming an interrupted
download and verifying its sha256. HF_ENDPOINT and HF_TOKEN are respected;
DROIDGO_CACHE or XDG_CACHE_HOME choose the cache. Prints the file's path.`,
		Example: "  droidgo pull\n  droidgo pull XHToken/Spark-X2.5-1.7B-GGUF:Q8_0",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			spec := ""
			if len(args) == 1 {
				spec = args[0]
			}
			repo, quant, err := hub.ParseSpec(spec)
			if err != nil {
				return usageErr(err)
			}
			c := d.hubClient()
			if d.isTerminal(d.stderr) {
				c.Progress = progressPrinter(d, quant)
			}
			p, err := c.Pull(d.ctx, repo, quant)
			if d.isTerminal(d.stderr) {
				fmt.Fprintln(d.stderr)
			}
			if err != nil {
				return fmt.Errorf("pull %s:%s: %w", repo, quant, err)
			}
			fmt.Fprintln(d.stdout, p)
			return nil
		},
	}
}

// progressPrinter draws a progress bar on stderr, at most ten times a second.
func progressPrinter(d *deps, label string) func(done, total int64) {
	bar := progress.New(progress.WithWidth(30))
	var last time.Time
	start := time.Now()
	return func(done, total int64) {
		if time.Since(last) < 100*time.Millisecond && done != total {
			return
		}
		last = time.Now()
		rate := float64(done) / max(time.Since(start).Seconds(), 0.001)
		if total <= 0 {
			fmt.Fprintf(d.stderr, "\r%s  %s  %s/s   ", label, human(done), human(int64(rate)))
			return
		}
		fmt.Fprintf(d.stderr, "\r%s %s %s / %s  %s/s   ", label, bar.ViewAs(float64(done)/float64(total)), human(done), human(total), human(int64(rate)))
	}
}

func human(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func newModelsCmd(d *deps) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "models",
		Short: "List the model files in the cache",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			list, err := d.hubClient().List()
			if err != nil {
				return err
			}
			if asJSON {
				if list == nil {
					list = []hub.Cached{}
				}
				return json.NewEncoder(d.jsonOut()).Encode(list)
			}
			if len(list) == 0 {
				fmt.Fprintf(d.stdout, "No models in %s. Get one with: droidgo pull\n", hub.CacheDir(d.getenv))
				return nil
			}
			for _, m := range list {
				fmt.Fprintf(termsafe.NewWriter(d.stdout), "%-40s %-36s %10s  %s\n", m.Repo, m.File, human(m.Size), m.Path)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// hubClient is a client of the model hub with the cache, endpoint and
// token the environment names.
func (d *deps) hubClient() *hub.Client {
	return &hub.Client{CacheDir: hub.CacheDir(d.getenv), Endpoint: d.getenv("HF_ENDPOINT"), Token: d.getenv("HF_TOKEN")}
}
