package local

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/droidgo/droidgo/model"
	"github.com/droidgo/droidgo/model/kvcache"
	"github.com/droidgo/droidgo/model/local/localtest"
)

// A turn far longer than the rings' slack does not make the next step
// recompute the system prompt: the prefix comes back from the snapshot,
// and the answer is what a fresh backend gives.
func TestNoPrefixRecomputeAfterLongTurn(t *testing.T) {
	c := localtest.Config()
	c.Window = 8
	path := localtest.ModelWith(t, c, 6)
	b := open(t, path, Options{ringSlack: 16})
	req := agentRequest(nil, false)
	req.Constrain = false
	req.MaxTokens = 200 // >> window + slack
	first := run(t, b, req, 0)
	if first.stats.GeneratedTokens < 100 {
		t.Fatalf("the model stopped after %d tokens (pick another seed)", first.stats.GeneratedTokens)
	}
	pre := b.prefixLen(req, b.tok.Encode(renderT(t, req), true))
	if pre < 20 {
		t.Fatalf("prefix of %d tokens", pre)
	}
	req2 := agentRequest([]string{"tap index 0"}, false)
	req2.Constrain = false
	req2.MaxTokens = 8
	before := b.Prefilled()
	got := run(t, b, req2, 0)
	computed := b.Prefilled() - before
	if got.stats.CachedTokens < pre {
		t.Errorf("after a %d-token turn: %d cached, the prefix has %d", first.stats.GeneratedTokens, got.stats.CachedTokens, pre)
	}
	if limit := int64(got.stats.PromptTokens - pre + got.stats.GeneratedTokens); computed > limit {
		t.Errorf("computed %d tokens, at most %d expected (prompt %d, prefix %d)", computed, limit, got.stats.PromptTokens, pre)
	}
	want := run(t, open(t, path, Options{ringSlack: 16}), req2, 0)
	if got.content != want.content {
		t.Errorf("after the restore %q, fresh %q", got.content, want.content)
	}
}

func renderT(t *testing.T, req model.ChatRequest) string {
	t.Helper()
	b := open(t, localtest.Model(t, 1), Options{})
	s, err := b.render(req)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type warnings struct {
	mu sync.Mutex
	w  []string
}

func (w *warnings) add(s string) { w.mu.Lock(); w.w = append(w.w, s); w.mu.Unlock() }
func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.w
	w.w = nil
	return out
}

// The prompt cache on disk: a second run loads the prefix instead of
// computing it and answers the same; a damaged entry is reported and
// rebuilt; a changed model or a changed system prompt misses.
func TestPromptCacheOnDisk(t *testing.T) {
	dir := t.TempDir()
	var ws warnings
	cache := &kvcache.Cache{Dir: filepath.Join(dir, "kv"), Warn: ws.add}
	path := localtest.Model(t, 2)
	req := agentRequest(nil, false)
	req.MaxTokens = 30
	turn := func(path string, req model.ChatRequest) turnOut {
		return run(t, open(t, path, Options{PromptCache: cache, Warn: ws.add}), req, 0)
	}
	cold := turn(path, req)
	if cold.stats.DiskTokens != 0 {
		t.Fatalf("cold run loaded %d tokens from disk", cold.stats.DiskTokens)
	}
	es, _ := cache.List()
	if len(es) != 1 || es[0].Tokens == 0 {
		t.Fatalf("entries after the first run: %+v", es)
	}
	warm := turn(path, req)
	if warm.stats.DiskTokens != es[0].Tokens || warm.stats.CachedTokens != es[0].Tokens {
		t.Errorf("warm run: %d from disk, %d cached; the entry has %d", warm.stats.DiskTokens, warm.stats.CachedTokens, es[0].Tokens)
	}
	if warm.content != cold.content {
		t.Errorf("warm answer %q, cold %q", warm.content, cold.content)
	}
	if w := ws.take(); len(w) != 0 {
		t.Errorf("warnings: %v", w)
	}

	// Damage the entry: ignored with a warning, recomputed, rewritten.
	data, _ := os.ReadFile(es[0].Path)
	data[len(data)/2] ^= 0x40
	if err := os.WriteFile(es[0].Path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	again := turn(path, req)
	if again.stats.DiskTokens != 0 || again.content != cold.content {
		t.Errorf("damaged entry: %d from disk, answer %q (want %q)", again.stats.DiskTokens, again.content, cold.content)
	}
	if w := ws.take(); len(w) != 1 || !strings.Contains(w[0], "rebuilt") {
		t.Errorf("warnings for a damaged entry: %v", w)
	}
	if o := turn(path, req); o.stats.DiskTokens == 0 {
		t.Error("the damaged entry was not rebuilt")
	}

	// Another model file (same shapes, other weights) misses.
	other := localtest.Model(t, 3)
	if o := turn(other, req); o.stats.DiskTokens != 0 {
		t.Errorf("another model loaded %d tokens of this one's cache", o.stats.DiskTokens)
	}
	// So does another system prompt.
	req2 := req
	req2.Messages = append([]model.Message(nil), req.Messages...)
	req2.Messages[0].Content += " Be brief."
	if o := turn(path, req2); o.stats.DiskTokens != 0 {
		t.Errorf("another system prompt loaded %d tokens", o.stats.DiskTokens)
	}
	if es, _ := cache.List(); len(es) != 3 {
		t.Errorf("%d entries, want 3 (two models, two prompts)", len(es))
	}
	if w := ws.take(); len(w) != 0 {
		t.Errorf("warnings: %v", w)
	}
}
