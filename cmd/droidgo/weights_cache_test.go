package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/droidgo/droidgo/model/kernels"
	"github.com/droidgo/droidgo/model/local/localtest"
	"github.com/droidgo/droidgo/model/quant"
	"github.com/droidgo/droidgo/model/spark"
	"github.com/droidgo/droidgo/model/weightcache"
)

// The interleaved weights are kept in the weights cache by the first run
// and mapped by the next (model bench says which); cache ls lists them
// and cache clear removes them; --weights-cache=false and the setting
// weights_cache=false keep runs off it.
func TestWeightsCacheCommands(t *testing.T) {
	t.Parallel()
	if !weightcache.Supported || !kernels.RepackPays(quant.Q4_K) && !kernels.RepackPays(quant.Q8_0) {
		t.Skipf("no weights cache here (%s level)", kernels.ISA())
	}
	h := newHarness(t)
	// Rows of 256 and more: the Q4_K matrices can be interleaved.
	c, _ := spark.Preset("q")
	c.Context, c.Window = 16384, 8192
	c.Layers, c.Sliding = 1, c.Sliding[:1]
	path := filepath.Join(t.TempDir(), "q.gguf")
	if err := localtest.WriteType(path, c, 3, "", "q4_k_m"); err != nil {
		t.Fatal(err)
	}
	bench := func(args ...string) string {
		t.Helper()
		r := h.run(context.Background(), append([]string{"model", "bench", path, "-p", "8", "-n", "0", "-r", "1"}, args...)...)
		if r.code != 0 {
			t.Fatalf("model bench: exit %d: %s", r.code, r.stderr)
		}
		return r.stderr
	}
	type lsOut struct {
		Weights struct {
			Dir     string             `json:"dir"`
			Entries []weightsEntryJSON `json:"entries"`
		} `json:"weights"`
	}
	ls := func() lsOut {
		t.Helper()
		var o lsOut
		r := h.run(context.Background(), "cache", "ls", "--json")
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &o) != nil {
			t.Fatalf("cache ls: exit %d: %s %s", r.code, r.stdout, r.stderr)
		}
		return o
	}
	if out := bench("--weights-cache=false"); strings.Contains(out, "weights cache") || len(ls().Weights.Entries) != 0 {
		t.Errorf("--weights-cache=false used the cache: %s", out)
	}
	if out := bench(); !strings.Contains(out, "moved") {
		t.Errorf("first run: %s", out)
	}
	o := ls()
	if len(o.Weights.Entries) != 1 || o.Weights.Entries[0].Model != filepath.Base(path) || !strings.HasSuffix(o.Weights.Dir, "droidgo/weights") {
		t.Fatalf("cache ls after the first run: %+v", o)
	}
	if out := bench(); !strings.Contains(out, "from the weights cache, "+o.Weights.Entries[0].Path) {
		t.Errorf("second run did not map the entry: %s", out)
	}
	if r := h.run(context.Background(), "cache", "ls"); !strings.Contains(r.stdout, "weights cache: ") || !strings.Contains(r.stdout, filepath.Base(path)) {
		t.Errorf("cache ls: %s", r.stdout)
	}
	r := h.run(context.Background(), "cache", "clear", "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"weights_removed":1`) || len(ls().Weights.Entries) != 0 {
		t.Errorf("cache clear: exit %d: %s", r.code, r.stdout)
	}

	// An agent run keeps the weights too, unless the setting says not to.
	run := func(setting string) int {
		h.env["DROIDGO_WEIGHTS_CACHE"] = setting
		if r := h.run(context.Background(), "run", "--sim", "wifi", "--model", path, "--json", "--max-steps", "1", "--no-think"); r.code != 0 && r.code != 1 {
			t.Fatalf("run: exit %d: %s", r.code, r.stderr)
		}
		return len(ls().Weights.Entries)
	}
	if n := run("false"); n != 0 {
		t.Errorf("weights_cache=false: %d entries", n)
	}
	if n := run(""); n != 1 {
		t.Errorf("run: %d entries, want 1", n)
	}
}
