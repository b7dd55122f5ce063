package main

import (
	"fmt"
	"io"
	"os"

	"github.com/droidgo/droidgo/config"
	"github.com/droidgo/droidgo/internal/sysmem"
	"github.com/droidgo/droidgo/model/kvcache"
	"github.com/droidgo/droidgo/model/local"
	"github.com/droidgo/droidgo/model/spark"
	"github.com/droidgo/droidgo/model/weightcache"
)

// localOpts are what a command sets beyond the configuration.
type localOpts struct {
	getenv    func(string) string
	cold      bool // no prompt cache on disk, whatever the setting
	unbatched bool // forced answer tokens one by one (bench agent's measuring aid)
	// meminfo reads the memory the model must fit in (nil: not checked);
	// sequences is how many the command runs at once (0: 1).
	meminfo   func() (sysmem.Info, error)
	sequences int
	warn      io.Writer
}

func openLocalWith(cfg *config.Config, path string, o localOpts) (*local.Backend, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("model %s: %w", path, err)
	}
	place, err := placeEngine(cfg.Threads, cfg.CPUs, cfg.Sources["cpus"].String())
	if err != nil {
		return nil, err
	}
	kv, ok := spark.ParseKVType(cfg.KVType)
	if !ok {
		return nil, usageErr(fmt.Errorf("kv_type (%s) must be f16 or f32, not %q", cfg.Sources["kv_type"], cfg.KVType))
	}
	warnf := func(s string) { fmt.Fprintf(o.warn, "droidgo: warning: %s\n", s) }
	opts := local.Options{Threads: place.Threads, CPUs: place.CPUs, Cores: place.What, Repack: cfg.Repack, KV: kv, Warn: warnf, Unbatched: o.unbatched}
	if o.meminfo != nil {
		if info, err := o.meminfo(); err == nil {
			opts.Memory, opts.Sequences = &info, o.sequences
		}
	}
	if cfg.Repack && cfg.WeightCache {
		opts.WeightsCache = &weightcache.Cache{Dir: weightcache.Dir(o.getenv), Warn: warnf}
	}
	if cfg.PromptCache && !o.cold {
		opts.PromptCache = &kvcache.Cache{Dir: kvcache.Dir(o.getenv), Warn: warnf}
	}
	b, err := local.Open(path, opts)
	if err != nil {
		return nil, err
	}
	for _, w := range b.Warnings() {
		warnf(w)
	}
	return b, nil
}
