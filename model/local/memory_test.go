package local

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/droidgo/droidgo/internal/sysmem"
	"github.com/droidgo/droidgo/model/local/localtest"
	"github.com/droidgo/droidgo/model/spark"
)

// Open checks the model against the machine's memory (a fake meminfo
// here): a machine without room for the weights, RunPositions of KV per
// sequence and the buffers gets a *sysmem.FitError naming the numbers; one
// with room for the model but not for the repack's copy beside it gets the
// model from its file's mapping, with a warning; one with room for both
// gets the repack.
func TestOpenChecksMemory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "q4.gguf")
	if err := localtest.WriteType(path, localtest.Config(), 1, "", "q4_k_m"); err != nil {
		t.Fatal(err)
	}
	// What the model needs, as Open counts it.
	probe := open(t, path, Options{KV: spark.KVF16})
	need := probe.memoryNeed()
	if need.Weights <= 0 || need.KV <= 0 || need.Scratch <= 0 || need.KVType != "f16" || need.Sequences != 1 {
		t.Fatalf("need %+v", need)
	}
	t.Logf("the model needs %+v", need)
	if want := min(RunPositions, probe.maxCtx); need.Positions != want {
		t.Errorf("KV counted for %d positions, want %d", need.Positions, want)
	}
	const total = 1 << 30 // reserve: 128 MiB
	reserve := sysmem.Info{Total: total}.Reserve()
	base := need.Weights + need.KV + need.Scratch + reserve

	t.Run("too big", func(t *testing.T) {
		mem := sysmem.Info{Total: total, Available: base - 1}
		_, err := Open(path, Options{KV: spark.KVF16, Repack: true, Memory: &mem})
		var fe *sysmem.FitError
		if !errors.As(err, &fe) {
			t.Fatalf("Open with %d bytes available: %v, want a *sysmem.FitError", mem.Available, err)
		}
		for _, want := range []string{"q4.gguf", "does not fit", "weights " + sysmem.Human(need.Weights), "KV cache " + sysmem.Human(need.KV),
			"MemAvailable is " + sysmem.Human(mem.Available), "MemTotal 1.0 GiB", "128 MiB kept free"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%q does not say %q", err, want)
			}
		}
		// Four chains need four sequences' KV.
		mem = sysmem.Info{Total: total, Available: base}
		if _, err := Open(path, Options{KV: spark.KVF16, Memory: &mem, Sequences: 4}); !errors.As(err, &fe) || !strings.Contains(err.Error(), "4 sequences") {
			t.Errorf("4 sequences in room for 1: %v", err)
		}
	})
	t.Run("fits", func(t *testing.T) {
		mem := sysmem.Info{Total: total, Available: base}
		var w warnings
		b := open(t, path, Options{KV: spark.KVF16, Repack: true, Memory: &mem, Warn: w.add})
		if need.Repack == 0 {
			// No interleaved kernel pays on this CPU: nothing to copy.
			if len(w.w) != 0 {
				t.Errorf("warnings %q", w.w)
			}
			return
		}
		if len(w.w) != 1 || !strings.Contains(w.w[0], "not repacked") || !strings.Contains(w.w[0], sysmem.Human(need.Repack)) {
			t.Errorf("room for the model only: warnings %q, want one saying the weights stay mapped", w.w)
		}
		if n, _ := b.m.RepackStats(); n != 0 {
			t.Errorf("repacked %d bytes without room for them", n)
		}
		// No room for more sequences: one ended turn's is kept, the one
		// a run's next turn continues.
		if b.opts.IdleSequences != 1 {
			t.Errorf("%d idle sequences kept with no room for them, want 1", b.opts.IdleSequences)
		}
	})
	t.Run("room for the repack", func(t *testing.T) {
		if need.Repack == 0 {
			t.Skip("no interleaved kernel pays on this CPU (kernels.RepackPays)")
		}
		mem := sysmem.Info{Total: total, Available: base + need.Repack}
		var w warnings
		b := open(t, path, Options{KV: spark.KVF16, Repack: true, Memory: &mem, Warn: w.add})
		if n, _ := b.m.RepackStats(); n != need.Repack || len(w.w) != 0 {
			t.Errorf("room for the copy: repacked %d bytes (want %d), warnings %q", n, need.Repack, w.w)
		}
	})
	t.Run("idle sequences", func(t *testing.T) {
		// Room for 3 more sequences beside the model: 3 ended turns'
		// sequences are kept; with room for many, DefaultIdle; a caller's
		// own bound stands.
		for _, tc := range []struct{ spare, set, want int }{{3, 0, 3}, {1000, 0, DefaultIdle}, {0, 5, 5}} {
			mem := sysmem.Info{Total: total, Available: base + need.Repack + int64(tc.spare)*need.KV + need.KV/2}
			b := open(t, path, Options{KV: spark.KVF16, Memory: &mem, IdleSequences: tc.set})
			if b.opts.IdleSequences != tc.want {
				t.Errorf("room for %d sequences, IdleSequences %d: keeps %d, want %d", tc.spare, tc.set, b.opts.IdleSequences, tc.want)
			}
		}
	})
}
