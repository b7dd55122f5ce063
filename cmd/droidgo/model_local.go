package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/droidgo/droidgo/config"
	"github.com/droidgo/droidgo/model"
	"github.com/droidgo/droidgo/model/local"
)

// The in-process Spark backend opens plain --model paths (GGUF files and
// HF directories). Threads, repacking and the answer constraint come from
// the configuration (threads, repack, constrain; DROIDGO_THREADS, ...):
// the constraint reaches the backend through the loop's requests.
func init() {
	modelOpeners["file"] = func(ctx context.Context, spec string) (model.Backend, error) {
		return openLocal(spec, os.Getenv, 0, localWarnings)
	}
}

// localWarnings receives the warnings of opening a model for `run`, which
// has no writer to hand to the opener hook (see open.go).
var localWarnings io.Writer = os.Stderr

// openLocal opens a model file with the configured engine settings
// (threads > 0 overrides the configured threads) and prints the backend's
// warnings (e.g. an unofficial chat template) to warn.
func openLocal(path string, getenv func(string) string, threads int, warn io.Writer) (*local.Backend, error) {
	cfg, err := config.Load(getenv)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("model %s: %w", path, err)
	}
	if threads <= 0 {
		threads = max(0, cfg.Threads)
	}
	b, err := local.Open(path, local.Options{Threads: threads, Repack: cfg.Repack})
	if err != nil {
		return nil, err
	}
	for _, w := range b.Warnings() {
		fmt.Fprintf(warn, "droidgo: warning: %s\n", w)
	}
	return b, nil
}
