package spark

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/droidgo/droidgo/model/kernels"
	"github.com/droidgo/droidgo/model/weightcache"
)

// The weights cache holds the repack's bytes: a model that maps them
// computes what one that copied them computes, bit for bit; the first run
// makes the entry, the next maps it; a model file changed since, or an
// entry damaged, is a miss that makes a new one.
func TestWeightsCache(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skipf("the weights cache is Linux-only (GOOS %s)", runtime.GOOS)
	}
	cfg, _ := Preset("gqa")
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := WriteRandomGGUF(path, cfg, "q4_k_m", 11); err != nil {
		t.Fatal(err)
	}
	var warned []string
	cache := &weightcache.Cache{Dir: filepath.Join(t.TempDir(), "w"), Warn: func(s string) { warned = append(warned, s) }}
	toks := randomTokens(20, cfg.Vocab, 3)
	run := func(c *weightcache.Cache) (logits []float32, cached string) {
		t.Helper()
		m, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		if m.RepackBytes() == 0 {
			t.Skipf("no interleaved kernel at the %s level", kernels.ISA())
		}
		if _, err := m.StartRepackNow(c); err != nil {
			t.Fatal(err)
		}
		if err := m.WaitRepack(context.Background()); err != nil {
			t.Fatal(err)
		}
		e, err := NewEngine(m, Options{Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		logits = evalAll(t, e, toks)
		if !m.Layers[0].FFNUp.x8 {
			t.Error("the Q4_K matrices are not interleaved")
		}
		return logits, m.RepackCached()
	}
	entries := func() []weightcache.Entry {
		es, err := cache.List()
		if err != nil {
			t.Fatal(err)
		}
		return es
	}
	want, _ := run(nil)
	got, cached := run(cache)
	if cached != "" || len(entries()) != 1 {
		t.Fatalf("first run: mapped from %q, %d entries; want a copy and a new entry", cached, len(entries()))
	}
	if !slices.Equal(got, want) {
		t.Error("first run with the cache computes other logits")
	}
	got, cached = run(cache)
	if cached == "" || cached != entries()[0].Path {
		t.Fatalf("second run: mapped from %q, want the entry %s", cached, entries()[0].Path)
	}
	if !slices.Equal(got, want) {
		t.Error("weights mapped from the cache compute other logits")
	}

	// A damaged entry is reported and replaced.
	if err := os.Truncate(cached, 5000); err != nil {
		t.Fatal(err)
	}
	got, cached = run(cache)
	if cached != "" || len(warned) != 1 || !slices.Equal(got, want) {
		t.Errorf("after damage: mapped from %q, warnings %q, same logits %v", cached, warned, slices.Equal(got, want))
	}
	if _, c := run(cache); c == "" {
		t.Error("the damaged entry was not rebuilt")
	}

	// The model file changed (another modification time): another key.
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	if _, c := run(cache); c != "" || len(entries()) != 2 {
		t.Errorf("after the model file changed: mapped from %q, %d entries", c, len(entries()))
	}
}
