package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/droidgo/droidgo/internal/termsafe"
	"github.com/droidgo/droidgo/model/kvcache"
	"github.com/droidgo/droidgo/model/weightcache"
)

// cacheEntryJSON is one entry of `cache ls --json`.
type cacheEntryJSON struct {
	Key     string    `json:"key"`
	Path    string    `json:"path"`
	Model   string    `json:"model"`
	Tokens  int       `json:"tokens"`
	KVType  string    `json:"kv_type"`
	Bytes   int64     `json:"bytes"`
	Created time.Time `json:"created"`
	Used    time.Time `json:"used"`
}

// weightsEntryJSON is one entry of the weights cache in `cache ls --json`.
type weightsEntryJSON struct {
	Key     string    `json:"key"`
	Path    string    `json:"path"`
	Model   string    `json:"model"`
	Bytes   int64     `json:"bytes"`
	Created time.Time `json:"created"`
	Used    time.Time `json:"used"`
}

// weightsJSON is the weights cache in `cache ls --json`.
type weightsJSON struct {
	Dir        string             `json:"dir"`
	Entries    []weightsEntryJSON `json:"entries"`
	TotalBytes int64              `json:"total_bytes"`
}

func newCacheCmd(d *deps) *cobra.Command {
	c := &cobra.Command{
		Use:   "cache",
		Short: "List or clear the prompt cache and the weights cache",
		Long: `The in-process engine saves the KV state of the fixed part of the agent's
prompt (system prompt and tool schemas) in $XDG_CACHE_HOME/droidgo/kv (else
~/.cache/droidgo/kv) and loads it in the next run instead of recomputing it.
Entries are keyed by the model file, the exact prefix, the engine's numerics
and the format version, checksummed, and bounded to 2 GiB in total (least
recently used removed first). The setting prompt_cache (DROIDGO_PROMPT_CACHE,
run --no-prompt-cache) turns it off.

The weights cache, $XDG_CACHE_HOME/droidgo/weights, holds the interleaved
copy of a model's weights that the engine makes at load (setting repack), one
file of about the model's size per model file, layout and CPU level, so that
the next run maps it instead of copying it into fresh memory. Bounded to
4 GiB (least recently used removed first); the setting weights_cache
(DROIDGO_WEIGHTS_CACHE) turns it off.`,
	}
	dir := func() string { return kvcache.Dir(d.getenv) }
	wc := func() *weightcache.Cache { return &weightcache.Cache{Dir: weightcache.Dir(d.getenv)} }
	var lsJSON, clearJSON bool
	ls := &cobra.Command{
		Use:   "ls [--json]",
		Short: "List the cached prompt prefixes and weights",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			kc := &kvcache.Cache{Dir: dir()}
			es, err := kc.List()
			if err != nil {
				return err
			}
			var total int64
			out := []cacheEntryJSON{}
			for _, e := range es {
				total += e.Bytes
				out = append(out, cacheEntryJSON{e.Key, e.Path, e.Model, e.Tokens, e.KV, e.Bytes, e.Created, e.Used})
			}
			w := wc()
			wes, err := w.List()
			if err != nil {
				return err
			}
			ws := weightsJSON{Dir: w.Dir, Entries: []weightsEntryJSON{}}
			for _, e := range wes {
				ws.TotalBytes += e.Bytes
				ws.Entries = append(ws.Entries, weightsEntryJSON{e.Key, e.Path, e.Model, e.Bytes, e.Created, e.Used})
			}
			if lsJSON {
				return json.NewEncoder(d.jsonOut()).Encode(struct {
					Dir        string           `json:"dir"`
					Entries    []cacheEntryJSON `json:"entries"`
					TotalBytes int64            `json:"total_bytes"`
					Weights    weightsJSON      `json:"weights"`
				}{kc.Dir, out, total, ws})
			}
			fmt.Fprintf(d.stdout, "prompt cache: %s (%d entries, %s)\n", kc.Dir, len(out), modelHuman(total))
			if len(out) > 0 {
				tw := tabwriter.NewWriter(d.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "KEY\tMODEL\tTOKENS\tKV\tSIZE\tLAST USED")
				for _, e := range out {
					fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", e.Key[:12], termsafe.Line(e.Model), e.Tokens, termsafe.Line(e.KVType), modelHuman(e.Bytes), e.Used.Local().Format("2006-01-02 15:04"))
				}
				if err := tw.Flush(); err != nil {
					return err
				}
			}
			fmt.Fprintf(d.stdout, "weights cache: %s (%d entries, %s)\n", ws.Dir, len(ws.Entries), modelHuman(ws.TotalBytes))
			if len(ws.Entries) == 0 {
				return nil
			}
			tw := tabwriter.NewWriter(d.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "KEY\tMODEL\tSIZE\tLAST USED")
			for _, e := range ws.Entries {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.Key[:12], termsafe.Line(e.Model), modelHuman(e.Bytes), e.Used.Local().Format("2006-01-02 15:04"))
			}
			return tw.Flush()
		},
	}
	ls.Flags().BoolVar(&lsJSON, "json", false, "print JSON")
	clear := &cobra.Command{
		Use:   "clear [--json]",
		Short: "Remove every cached prompt prefix and weights file",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			kc := &kvcache.Cache{Dir: dir()}
			n, size, err := kc.Clear()
			if err != nil {
				return err
			}
			w := wc()
			wn, wsize, err := w.Clear()
			if err != nil {
				return err
			}
			if clearJSON {
				return json.NewEncoder(d.jsonOut()).Encode(struct {
					Dir            string `json:"dir"`
					Removed        int    `json:"removed"`
					Bytes          int64  `json:"bytes"`
					WeightsDir     string `json:"weights_dir"`
					WeightsRemoved int    `json:"weights_removed"`
					WeightsBytes   int64  `json:"weights_bytes"`
				}{kc.Dir, n, size, w.Dir, wn, wsize})
			}
			fmt.Fprintf(d.stdout, "removed %d entries (%s) from %s\n", n, modelHuman(size), kc.Dir)
			fmt.Fprintf(d.stdout, "removed %d entries (%s) from %s\n", wn, modelHuman(wsize), w.Dir)
			return nil
		},
	}
	clear.Flags().BoolVar(&clearJSON, "json", false, "print JSON")
	c.AddCommand(ls, clear)
	return c
}
