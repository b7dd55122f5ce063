package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/droidgo/droidgo/model/kernels"
)

// TestMain runs droidgo itself, instead of the tests, when
// DROIDGO_TEST_MAIN_ARGS holds a JSON list of arguments: tests that need
// droidgo started with another environment (DROIDGO_ISA is read once, at
// start-up) run this test binary as a child that way.
func TestMain(m *testing.M) {
	if a := os.Getenv("DROIDGO_TEST_MAIN_ARGS"); a != "" {
		var args []string
		if err := json.Unmarshal([]byte(a), &args); err != nil {
			panic(err)
		}
		os.Exit(execute(context.Background(), args, os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(runIsolated(m))
}

// runIsolated runs the tests with droidgo's caches (weights, KV prefixes,
// downloads) in a temporary directory: a test that runs a model without
// naming a cache must not fill the user's ~/.cache/droidgo. Go's own build
// cache, which also follows XDG_CACHE_HOME, stays where it was.
func runIsolated(m *testing.M) int {
	if os.Getenv("GOCACHE") == "" {
		if d, err := os.UserCacheDir(); err == nil {
			os.Setenv("GOCACHE", filepath.Join(d, "go-build"))
		}
	}
	dir, err := os.MkdirTemp("", "droidgo-test-cache-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	os.Setenv("XDG_CACHE_HOME", dir)
	return m.Run()
}

// TestISAEnvIsConfigurationError starts every command that runs the engine
// with DROIDGO_ISA naming no level this CPU can run (an unknown name, and
// each level of this architecture it lacks): each must refuse with exit 2
// and the one sentence of kernels.ISAError on stderr, naming the levels it
// can run, and write nothing to stdout.
func TestISAEnvIsConfigurationError(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	if code, _, errs := runModelCLI(t, "model", "make-random", "--arch-size", "tiny", "--type", "q8_0", "--out", path); code != 0 {
		t.Fatalf("make-random: exit %d: %s", code, errs)
	}
	config := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(config, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	values := []string{"bogus", "AVX2"}
	for _, l := range []string{"avx2", "avx512", "amx", "neon", "dotprod", "i8mm"} {
		if !slices.Contains(kernels.Levels(), l) {
			values = append(values, l)
		}
	}
	cmds := [][]string{
		{"model", "bench", path, "-p", "4", "-n", "2", "--json"},
		{"model", "info", path},
		{"model", "generate", path, "-n", "2", "--tokens", "0,1"},
		{"model", "logits", path, "--tokens", "0,1"},
		{"run", "--sim", "wifi", "--model", path, "--max-steps", "1", "--json", "Turn on Wi-Fi"},
		{"bench", "agent", "--sim", "wifi", "--model", path, "--steps", "1"},
	}
	for _, v := range values {
		for _, args := range cmds {
			a, _ := json.Marshal(args)
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), "DROIDGO_TEST_MAIN_ARGS="+string(a), "DROIDGO_ISA="+v,
				"DROIDGO_CONFIG="+config, "DROIDGO_CACHE="+t.TempDir())
			var out, errb strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &errb
			err := cmd.Run()
			code := cmd.ProcessState.ExitCode()
			msg := errb.String()
			what := "DROIDGO_ISA=" + v + " droidgo " + strings.Join(args, " ")
			if err != nil && code < 0 {
				t.Fatalf("%s: %v", what, err)
			}
			if code != 2 || out.Len() != 0 || strings.Count(msg, "\n") != 1 || !strings.HasPrefix(msg, "droidgo: DROIDGO_ISA=") {
				t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 2, one line on stderr", what, code, out.String(), msg)
				continue
			}
			for _, l := range kernels.Levels() {
				if !strings.Contains(msg, l) {
					t.Errorf("%s: %q does not name level %s", what, msg, l)
				}
			}
		}
	}
}
