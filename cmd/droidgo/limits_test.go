package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/droidgo/droidgo/config"
	"github.com/droidgo/droidgo/loop"
	"github.com/droidgo/droidgo/model/spark"
	"github.com/spf13/cobra"
)

// TestThreadLimitIsTheEngines keeps the one --threads limit equal to what
// the engine accepts.
func TestThreadLimitIsTheEngines(t *testing.T) {
	t.Parallel()
	if config.MaxThreads != spark.MaxThreads {
		t.Errorf("config.MaxThreads %d, spark.MaxThreads %d", config.MaxThreads, spark.MaxThreads)
	}
}

// TestFlagLimits: one limit, checked before any work, exit 2 everywhere:
// on the command line of every command that takes the flag, and in the
// configuration file for every command that reads it.
func TestFlagLimits(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	dir := t.TempDir()
	tiny := filepath.Join(dir, "tiny.gguf")
	if r := h.run(context.Background(), "model", "make-random", "--arch-size", "tiny", "--out", tiny); r.code != 0 {
		t.Fatalf("make-random: %s", r.stderr)
	}
	cases := []struct {
		args []string
		msg  string
	}{
		{[]string{"model", "bench", tiny, "-t", "100000"}, "--threads must be at most 256, not 100000"},
		{[]string{"model", "logits", tiny, "--tokens", "1", "--threads", "100000"}, "--threads must be at most 256, not 100000"},
		{[]string{"model", "generate", tiny, "--tokens", "1", "--threads", "100000"}, "--threads must be at most 256, not 100000"},
		{[]string{"model", "chat", tiny, "--threads", "100000"}, "--threads must be at most 256, not 100000"},
		// model chat's --temp and --top-p are the sampling settings' ranges.
		{[]string{"model", "chat", tiny, "--temp", "2.5"}, "--temp must be at most 2, not 2.5"},
		{[]string{"model", "chat", tiny, "--top-p", "0"}, "--top-p must be more than 0, not 0"},
		{[]string{"model", "bench", tiny, "--batch", "514"}, "--batch must be between 0 (the engine's default) and 513, not 514"},
		{[]string{"model", "logits", tiny, "--tokens", "1", "--batch", "1000"}, "--batch must be between 0 (the engine's default) and 513"},
		{[]string{"model", "info", tiny, "--ctx", "9223372036854775807"}, "exceeds the model's context length"},
		{[]string{"model", "info", tiny, "--ctx", "1000000"}, "exceeds the model's context length"},
	}
	for _, c := range cases {
		r := h.run(context.Background(), c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.msg) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, r.code, r.stderr, c.msg)
		}
	}

	cfgFile := filepath.Join(dir, "config.toml")
	os.WriteFile(cfgFile, []byte("threads = 100000\n"), 0o644)
	for _, args := range [][]string{{"config"}, {"run", "--sim", "wifi", "--model", scriptFor("wifi", "0"), "--no-tui"}} {
		h := newHarness(t)
		h.env["DROIDGO_CONFIG"] = cfgFile
		r := h.run(context.Background(), args...)
		if r.code != 2 || !strings.Contains(r.stderr, "config.toml:1: threads: must be at most 256, not 100000") {
			t.Errorf("threads = 100000 in the file, %v: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
	h = newHarness(t)
	h.env["DROIDGO_THREADS"] = "100000"
	if r := h.run(context.Background(), "config"); r.code != 2 || !strings.Contains(r.stderr, "DROIDGO_THREADS") {
		t.Errorf("DROIDGO_THREADS=100000: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestFlagDefaultsAreTheSettings: the defaults --help shows for run's and
// eval's budgets and labels are the settings' defaults (config.Keys),
// which are the loop's.
func TestFlagDefaultsAreTheSettings(t *testing.T) {
	t.Parallel()
	def := map[string]string{}
	for _, k := range config.Keys {
		def[k.Name] = k.Default
	}
	if def["max_steps"] != strconv.Itoa(loop.DefaultMaxSteps) || def["sensitive"] != strings.Join(loop.DefaultSensitive, ",") {
		t.Errorf("settings' defaults %q, %q are not the loop's", def["max_steps"], def["sensitive"])
	}
	d := newDeps(context.Background(), nil, io.Discard, io.Discard)
	for _, c := range []*cobra.Command{newRunCmd(d), newEvalCmd(d)} {
		for flag, key := range map[string]string{"max-steps": "max_steps", "think-budget": "think_budget", "sensitive": "sensitive",
			"temperature": "temperature", "top-p": "top_p", "seed": "seed"} {
			f := c.Flags().Lookup(flag)
			if f == nil {
				continue // eval has no --sensitive
			}
			if got := strings.Trim(f.DefValue, "[]"); got != def[key] {
				t.Errorf("%s --%s defaults to %q, the setting %s to %q", c.Name(), flag, got, key, def[key])
			}
		}
	}
}
