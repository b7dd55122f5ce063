package spark

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/droidgo/droidgo/model/kernels"

	"github.com/droidgo/droidgo/model/gguf"
)

var (
	modelDir   string
	modelMu    sync.Mutex
	modelPaths = map[string]string{}
)

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "spark-test-")
	if err != nil {
		panic(err)
	}
	modelDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// randomModel writes (once per test binary) a random model of the named
// preset and type and opens it.
func randomModel(t testing.TB, preset, typ string, seed uint64) *Model {
	t.Helper()
	cfg, ok := Preset(preset)
	if !ok {
		t.Fatalf("no preset %q", preset)
	}
	key := fmt.Sprintf("%s-%s-%d", preset, typ, seed)
	modelMu.Lock()
	path, ok := modelPaths[key]
	if !ok {
		path = filepath.Join(modelDir, key+".gguf")
		if err := WriteRandomGGUF(path, cfg, typ, seed); err != nil {
			modelMu.Unlock()
			t.Fatal(err)
		}
		modelPaths[key] = path
	}
	modelMu.Unlock()
	m, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func randomTokens(n, vocab int, seed uint64) []int {
	r := rand.New(rand.NewPCG(seed, 99))
	out := make([]int, n)
	for i := range out {
		out[i] = r.IntN(vocab)
	}
	return out
}

// referenceLogits runs toks through the plain forward pass of reference.go
// and returns the logits of every position.
func referenceLogits(t testing.TB, m *Model, toks []int) [][]float32 {
	t.Helper()
	r := NewReference(m)
	out := make([][]float32, len(toks))
	for i, tok := range toks {
		lg, err := r.Forward(tok)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = lg
	}
	return out
}

func evalAll(t testing.TB, e *Engine, toks []int) []float32 {
	t.Helper()
	out, err := e.Eval(context.Background(), toks, LogitsAll)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The engine (cache, ring buffers, batching, threads) computes what the
// plain reference of reference.go computes, for shapes with heads*head_dim != hidden
// (tiny) and with 4:1 GQA (gqa), over sequences longer than twice the window.
func TestEngineMatchesReference(t *testing.T) {
	for _, preset := range []string{"tiny", "gqa"} {
		m := randomModel(t, preset, "f32", 7)
		toks := randomTokens(3*m.Config.Window+5, m.Config.Vocab, 1)
		ref := referenceLogits(t, m, toks)
		// slack 4 makes the sliding rings (window+4 slots) wrap several times.
		for _, kv := range []KVType{KVF32, KVF16} {
			var first []float32
			for _, opts := range []Options{{Threads: 1}, {Threads: 3, Batch: 4}, {Threads: 2, Batch: 1}, {Batch: 5, slack: 4}, {Batch: 1, slack: 1}} {
				opts.KV = kv
				e, _ := NewEngine(m, opts)
				got := evalAll(t, e, toks)
				V := m.Config.Vocab
				worst := 0.0
				for p := range toks {
					worst = math.Max(worst, maxDiff32(got[p*V:(p+1)*V], ref[p]))
				}
				// float32 accumulation over a few hundred terms per dot
				// product, logits of std ~4; an f16 cache rounds keys,
				// values, queries and weights to 11 bits (measured
				// 0.016-0.018 here).
				tol := 2e-3
				if kv == KVF16 {
					tol = 0.03
				}
				if worst > tol {
					t.Errorf("%s %+v: max |engine - reference| = %.3g", preset, opts, worst)
				}
				// Batching, threads and ring wrapping change nothing but
				// the float32 summation order, with either cache (which
				// can move an f16 rounding of a weight by one step:
				// measured up to 0.0036).
				if first == nil {
					first = got
				} else if d := maxDiff32(got, first); d > 2e-3 && (kv == KVF32 || d > 5e-3) {
					t.Errorf("%s %+v: differs from %+v by %.3g", preset, opts, Options{Threads: 1, KV: kv}, d)
				}
			}
		}
	}
}

// Every weight type runs through the engine like the reference on
// dequantised weights: to float rounding with FloatActivations, and within
// the perturbation of llama.cpp-style activation rounding (8-bit Q8_0/Q8_K
// activations move logits of std ~4 by up to ~1 on these random models)
// otherwise. The tight check of the rounded path is against llama.cpp.
func TestQuantTypesMatchReference(t *testing.T) {
	cases := []struct {
		typ string
		tol float64
	}{{"f16", 0.05}, {"bf16", 0.5}, {"q8_0", 1}, {"q4_0", 1.5}, {"q4_k_m", 1.5}, {"q6_k", 1}, {"q5_k", 1}}
	for _, c := range cases {
		m := randomModel(t, "gqa", c.typ, 3)
		toks := randomTokens(12, m.Config.Vocab, 2)
		ref := referenceLogits(t, m, toks)
		V := m.Config.Vocab
		for _, float := range []bool{false, true} {
			e, _ := NewEngine(m, Options{FloatActivations: float, KV: KVF32})
			got := evalAll(t, e, toks)
			worst := 0.0
			for p := range toks {
				worst = math.Max(worst, maxDiff32(got[p*V:(p+1)*V], ref[p]))
			}
			tol := c.tol
			if float {
				tol = 2e-3
			}
			if worst > tol {
				t.Errorf("%s float=%v: max diff %.3g > %.3g", c.typ, float, worst, tol)
			}
		}
	}
}

// Prefilling in one go, in chunks, or token by token gives the same logits,
// bit for bit at every kernel level that claims batch invariance (the
// batched and one-token kernels sum each output in the same order). At a
// level that does not, the first position agrees to float32 rounding, and
// once an activation lands on the other side of a Q8_0 rounding boundary
// the difference carries on like it does between this engine and
// llama.cpp, so later positions are held to TestLlamaCppLogits' q8_0 bound.
func TestBatchingIsExact(t *testing.T) {
	best := kernels.ISA()
	defer kernels.SetISA(best)
	for _, isa := range kernels.Levels() {
		if err := kernels.SetISA(isa); err != nil {
			t.Fatal(err)
		}
		m := randomModel(t, "tiny", "q8_0", 5)
		tol0, tol := 0.0, 0.0
		if !m.BatchInvariant() {
			tol0, tol = 1e-4, 0.5 // logits have std ~4 here
		}
		toks := randomTokens(40, m.Config.Vocab, 3)
		V := m.Config.Vocab
		e1, _ := NewEngine(m, Options{Batch: 64})
		want := evalAll(t, e1, toks)
		e2, _ := NewEngine(m, Options{Batch: 1, Threads: 1})
		for i, tok := range toks {
			got, err := e2.Eval(context.Background(), []int{tok}, LogitsLast)
			if err != nil {
				t.Fatal(err)
			}
			if d := maxDiff32(got, want[i*V:(i+1)*V]); d > tol || (i == 0 && d > tol0) {
				t.Fatalf("isa %s: position %d: token-by-token differs by %g > %g", isa, i, d, tol)
			}
		}
		if e2.Prefilled() != 40 || e2.Len() != 40 {
			t.Errorf("prefilled %d len %d", e2.Prefilled(), e2.Len())
		}
		e1.Close()
		e2.Close()
	}
}

func maxDiff32(a, b []float32) float64 {
	var m float64
	for i := range a {
		m = math.Max(m, math.Abs(float64(a[i]-b[i])))
	}
	return m
}

// A conversation that keeps its prefix reuses the cache; what is computed
// equals a fresh evaluation.
func TestReuseAndTruncate(t *testing.T) {
	m := randomModel(t, "tiny", "f32", 9)
	ctx := context.Background()
	V := m.Config.Vocab
	a := randomTokens(30, V, 4)
	b := append(append([]int(nil), a[:22]...), randomTokens(15, V, 5)...)

	// The vector attention path in both: with tile attention (amx) the
	// fresh prompt would take it and the reused one's 15 tokens not, which
	// sum in different orders (TestTileAttentionEngine bounds that).
	fresh, _ := NewEngine(m, Options{vectorAttention: true})
	want, _ := fresh.Eval(ctx, b, LogitsLast)

	e, _ := NewEngine(m, Options{Batch: 7, vectorAttention: true})
	if _, err := e.Eval(ctx, a, LogitsNone); err != nil {
		t.Fatal(err)
	}
	kept := e.Reuse(b)
	if kept != 22 {
		t.Fatalf("Reuse kept %d, want 22", kept)
	}
	got, err := e.Eval(ctx, b[kept:], LogitsLast)
	if err != nil {
		t.Fatal(err)
	}
	if d := maxDiff32(got, want); d > 1e-5 {
		t.Errorf("after reuse logits differ by %g", d)
	}
	if e.Prefilled() != 30+15 {
		t.Errorf("prefilled %d, want 45", e.Prefilled())
	}
	// Reuse never keeps the whole prompt: the last token must be evaluated.
	if k := e.Reuse(b); k != len(b)-1 {
		t.Errorf("Reuse of the cached prompt kept %d, want %d", k, len(b)-1)
	}
	// Going back further than the ring allows clears the cache.
	long := randomTokens(ringSize(m.Config.Window)+40, V, 6)
	e, _ = NewEngine(m, Options{Batch: 64})
	if err := e.Prefill(ctx, long); err != nil {
		t.Fatal(err)
	}
	if n := e.Truncate(len(long) - 10); n != len(long)-10 {
		t.Errorf("short truncate kept %d", n)
	}
	if n := e.Truncate(20); n != 0 || e.Len() != 0 {
		t.Errorf("truncate past the ring kept %d (len %d), want 0", n, e.Len())
	}
}

// With the f16 cache and 4 query heads per KV head (gqa), f16 attention
// takes 4 tokens per task (f16Group); a token's result must not depend on
// how the prompt was split into batches (so a reused cache equals a fresh
// one, as above). The prompt is long enough for groups whose tokens all see
// whole blocks of attnBlock values (one product for the group's 16 weight
// vectors) and for the blocks only some of them see (a product per token):
// the block that holds the diagonal, and in sliding layers the first block
// of each window, with the preset's window (8) and one of 300 (the block
// in the middle of the window shared). The vector path: tile attention
// (amx) takes large batches only and sums in its own order.
func TestF16GroupsDoNotDependOnBatch(t *testing.T) {
	for _, window := range []int{0, 300} {
		m := randomModel(t, "gqa", "f32", 11)
		if window > 0 {
			m.Config.Window = window
		}
		toks := randomTokens(2*attnBlock+m.Config.Window+7, m.Config.Vocab, 3)
		tol := 0.0 // bit for bit where the kernels are batch invariant
		if !m.BatchInvariant() {
			tol = 1e-5
		}
		var want []float32
		for _, batch := range []int{1, 3, 4, 7, 64} {
			e, _ := NewEngine(m, Options{Batch: batch, KV: KVF16, vectorAttention: true})
			got := evalAll(t, e, toks)
			if want == nil {
				want = got
				continue
			}
			if d := maxDiff32(got, want); d > tol {
				t.Errorf("window %d, batch %d: logits differ from batch 1 by %g", m.Config.Window, batch, d)
			}
		}
	}
}

func TestCancelAndErrors(t *testing.T) {
	m := randomModel(t, "tiny", "f32", 1)
	e, _ := NewEngine(m, Options{MaxContext: 50})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Eval(ctx, []int{1, 2, 3}, LogitsLast); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled eval: %v", err)
	}
	if e.Len() != 0 {
		t.Errorf("cancelled eval left %d cached tokens", e.Len())
	}
	if _, err := e.Eval(context.Background(), []int{1, 512}, LogitsLast); err == nil {
		t.Error("out-of-range token accepted")
	}
	if _, err := e.Eval(context.Background(), make([]int, 51), LogitsNone); err == nil {
		t.Error("context overflow accepted")
	}
	if _, err := e.Eval(context.Background(), nil, LogitsLast); err == nil {
		t.Error("empty eval with logits accepted")
	}
}

// Malformed models: each is a well-formed GGUF that is not a usable Spark
// model, and each gets an ErrModel error naming the problem.
func TestBadModels(t *testing.T) {
	cfg, _ := Preset("tiny")
	type mutate func(w *gguf.Writer, ts *[]RandomTensor)
	cases := []struct {
		name string
		f    mutate
		want string
	}{
		{"wrong architecture", func(w *gguf.Writer, _ *[]RandomTensor) { w.Set("general.architecture", "llama") }, `architecture is "llama"`},
		{"missing key", func(w *gguf.Writer, _ *[]RandomTensor) { w.Set(Arch+".block_count", "eight") }, "block_count is missing"},
		{"missing pattern", func(w *gguf.Writer, _ *[]RandomTensor) { w.Set(Arch+".attention.sliding_window_pattern", "x") }, "sliding_window_pattern"},
		{"short pattern", func(w *gguf.Writer, _ *[]RandomTensor) {
			w.Set(Arch+".attention.sliding_window_pattern", []bool{true})
		}, "1 entries for 8 layers"},
		{"missing tensor", func(_ *gguf.Writer, ts *[]RandomTensor) { *ts = (*ts)[:len(*ts)-1] }, "blk.7.ffn_down.weight is missing"},
		{"wrong shape", func(_ *gguf.Writer, ts *[]RandomTensor) { (*ts)[3].Dims = []int{128, 100} }, "blk.0.attn_qkv.weight has shape [128 100]"},
		{"heads mismatch", func(w *gguf.Writer, _ *[]RandomTensor) { w.Set(Arch+".attention.head_count", uint32(3)) }, "not a multiple"},
		{"vocab mismatch", func(w *gguf.Writer, _ *[]RandomTensor) { w.Set(Arch+".vocab_size", uint32(100)) }, "vocab_size 100"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := gguf.NewWriter()
			cfg.SetGGUF(w)
			ts := RandomTensors(cfg)
			c.f(w, &ts)
			for _, rt := range ts {
				rows := 1
				for _, d := range rt.Dims[1:] {
					rows *= d
				}
				w.AddTensor(rt.Name, 0, rt.Dims, make([]byte, 4*rt.Dims[0]*rows))
			}
			path := filepath.Join(t.TempDir(), "bad.gguf")
			if err := w.WriteFile(path); err != nil {
				t.Fatal(err)
			}
			m, err := Open(path)
			if err == nil {
				m.Close()
				t.Fatal("opened")
			}
			if !errors.Is(err, ErrModel) || !contains(err.Error(), c.want) {
				t.Errorf("error %q, want ErrModel mentioning %q", err, c.want)
			}
		})
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && indexOf(s, sub) >= 0)
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// An HF directory and a BF16 GGUF of the same seed hold the same values and
// give the same logits.
func TestHFMatchesGGUF(t *testing.T) {
	cfg, _ := Preset("gqa")
	dir := filepath.Join(t.TempDir(), "hf")
	if err := WriteRandomHF(dir, cfg, 11); err != nil {
		t.Fatal(err)
	}
	hf, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer hf.Close()
	if hf.Format != "hf" || hf.Layers[0].QKV.Type.String() != "BF16" {
		t.Errorf("format %s type %s", hf.Format, hf.Layers[0].QKV.Type)
	}
	gg := randomModel(t, "gqa", "bf16", 11)
	toks := randomTokens(20, cfg.Vocab, 8)
	e1, _ := NewEngine(hf, Options{})
	e2, _ := NewEngine(gg, Options{})
	a, b := evalAll(t, e1, toks), evalAll(t, e2, toks)
	if d := maxDiff32(a, b); d != 0 {
		t.Errorf("HF and GGUF logits differ by %g", d)
	}
}

func TestBadHF(t *testing.T) {
	cfg, _ := Preset("tiny")
	dir := t.TempDir()
	if err := WriteRandomHF(dir, cfg, 1); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "config.json")
	good, _ := os.ReadFile(cfgPath)
	cases := []struct {
		name, config, want string
	}{
		{"not spark", strings.Replace(string(good), `"spark2_5"`, `"llama"`, 1), "not a Spark model"},
		{"bad json", "{", "config.json"},
		{"layer types", strings.Replace(string(good), `"full_attention",`, ``, 1), "layer_types"},
		{"hidden mismatch", strings.Replace(string(good), `"hidden_size": 128`, `"hidden_size": 64`, 1), "has shape"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			os.WriteFile(cfgPath, []byte(c.config), 0o644)
			m, err := Open(dir)
			if err == nil {
				m.Close()
				t.Fatal("opened")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not mention %q", err, c.want)
			}
		})
	}
	os.Remove(cfgPath)
	if _, err := Open(dir); err == nil {
		t.Error("opened a directory without config.json")
	}
}

func TestRandomVocabIsUnique(t *testing.T) {
	w := gguf.NewWriter()
	addTokenizer(w, 70000)
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.OpenBytes(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	toks, _ := f.Strings("tokenizer.ggml.tokens")
	seen := map[string]bool{}
	for i, s := range toks {
		if seen[s] {
			t.Fatalf("token %d %q is a duplicate", i, s)
		}
		seen[s] = true
	}
	merges, _ := f.Strings("tokenizer.ggml.merges")
	for _, m := range merges {
		l, r, _ := strings.Cut(m, " ")
		if !seen[l] || !seen[r] || !seen[l+r] {
			t.Fatalf("merge %q joins unknown tokens", m)
		}
	}
}

func TestPresets(t *testing.T) {
	for _, name := range []string{"1.7b", "4b", "tiny", "gqa", "q"} {
		c, ok := Preset(name)
		if !ok {
			t.Fatalf("no preset %s", name)
		}
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		var params int
		for _, rt := range RandomTensors(c) {
			n := 1
			for _, d := range rt.Dims {
				n *= d
			}
			params += n
		}
		if name == "1.7b" && params != 1707657216 {
			t.Errorf("1.7b has %d parameters, want 1707657216", params)
		}
		if name == "4b" && c.QDim() == c.Hidden {
			t.Errorf("4b: q width %d should differ from hidden %d", c.QDim(), c.Hidden)
		}
	}
}
