package spark

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/droidgo/droidgo/model/kernels"
)

// eachLevel runs f at every kernel level of this CPU; f checks whether the
// level keeps its model's products batch invariant (Model.BatchInvariant,
// skipVariant) before it compares a sequence's bits with others and alone.
func eachLevel(t *testing.T, f func(t *testing.T)) {
	best := kernels.ISA()
	t.Cleanup(func() { kernels.SetISA(best) })
	for _, l := range kernels.Levels() {
		if err := kernels.SetISA(l); err != nil {
			t.Fatal(err)
		}
		t.Run(l, f)
	}
}

// skipVariant skips the rest of a test whose model's products are not all
// batch invariant at the level in use.
func skipVariant(t *testing.T, m *Model) {
	t.Helper()
	if !m.BatchInvariant() {
		t.Skipf("level %s does not keep every product of this model batch invariant (Model.BatchInvariant)", kernels.ISA())
	}
}

// seqPlan is one sequence of a batch scenario: its tokens (a prompt, then
// tokens fed one or a few at a time, like decoding and dictated answers),
// when it joins, and whether it leaves early.
type seqPlan struct {
	toks   []int
	prompt int // the first prompt tokens go in chunks
	join   int // the pass it joins at
	leave  int // it is closed after this many tokens (0: never)
	fork   bool
}

// plans makes n sequences over vocab v with prompts around the window w.
func plans(r *rand.Rand, n, v, w int, prefix []int) []seqPlan {
	ps := make([]seqPlan, n)
	for i := range ps {
		p := &ps[i]
		p.prompt = 1 + r.IntN(3*w+5)
		p.toks = randomTokens(p.prompt+2+r.IntN(2*w), v, uint64(100+i))
		p.join = r.IntN(6)
		if i%3 == 2 {
			p.leave = p.prompt + 1 + r.IntN(3)
		}
		if prefix != nil && i%2 == 1 {
			p.fork = true
			p.toks = append(append([]int(nil), prefix...), p.toks...)
			p.prompt += len(prefix)
		}
	}
	return ps
}

// aloneLogits computes every position of toks in a fresh engine, one token
// at a time (the one-token kernels).
func aloneLogits(t testing.TB, m *Model, opts Options, toks []int) [][]float32 {
	t.Helper()
	e, err := NewEngine(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	out := make([][]float32, len(toks))
	for i, tok := range toks {
		lg, err := e.Eval(context.Background(), []int{tok}, LogitsLast)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = lg
	}
	return out
}

// runMixed runs the plans through one engine in passes mixing every
// sequence that is active: prompts in chunks of random size, then one or
// a few tokens at a time; sequences join late and some leave early. Forked
// plans start from a Prefix of prefix. It returns every position's logits
// per plan.
func runMixed(t testing.TB, e *Engine, r *rand.Rand, ps []seqPlan, prefix *Prefix) [][][]float32 {
	t.Helper()
	V := e.Model().Config.Vocab
	got := make([][][]float32, len(ps))
	seqs := make([]*Seq, len(ps))
	done := make([]int, len(ps))
	for pass := 0; ; pass++ {
		var works []Work
		var who []int
		active := 0
		for i := range ps {
			p := &ps[i]
			if pass < p.join || (p.leave > 0 && done[i] >= p.leave) || done[i] == len(p.toks) {
				continue
			}
			active++
			if seqs[i] == nil {
				if p.fork {
					s, err := e.Fork(prefix)
					if err != nil {
						t.Fatal(err)
					}
					seqs[i] = s
					done[i] = prefix.Len()
					got[i] = make([][]float32, prefix.Len())
				} else {
					seqs[i] = e.NewSeq()
				}
			}
			n := 1 + r.IntN(3)
			if done[i] < p.prompt {
				n = 1 + r.IntN(min(e.Batch(), 2*e.Model().Config.Window+3))
			}
			n = min(n, len(p.toks)-done[i], e.Batch())
			works = append(works, Work{Seq: seqs[i], Tokens: p.toks[done[i] : done[i]+n], Logits: LogitsAll})
			who = append(who, i)
		}
		if active == 0 {
			break
		}
		r.Shuffle(len(works), func(a, b int) { works[a], works[b] = works[b], works[a]; who[a], who[b] = who[b], who[a] })
		if err := e.Step(context.Background(), works); err != nil {
			t.Fatal(err)
		}
		for k, i := range who {
			w := &works[k]
			if w.Err != nil {
				t.Fatal(w.Err)
			}
			for j := range w.Tokens {
				got[i] = append(got[i], append([]float32(nil), w.Out[j*V:(j+1)*V]...))
			}
			done[i] += len(w.Tokens)
			if ps[i].leave > 0 && done[i] >= ps[i].leave {
				seqs[i].Close()
			}
		}
	}
	return got
}

// checkSame compares the logits of every position computed in mixed passes
// with the ones computed alone, bit for bit.
func checkSame(t *testing.T, what string, ps []seqPlan, got [][][]float32, alone func(toks []int) [][]float32, skip func(i int) int) {
	t.Helper()
	for i, p := range ps {
		want := alone(p.toks[:len(got[i])])
		for pos := skip(i); pos < len(got[i]); pos++ {
			for v := range want[pos] {
				if math.Float32bits(got[i][pos][v]) != math.Float32bits(want[pos][v]) {
					t.Fatalf("%s: sequence %d (prompt %d, joined at pass %d) position %d token %d: %v in the batch, %v alone",
						what, i, p.prompt, p.join, pos, v, got[i][pos][v], want[pos][v])
				}
			}
		}
	}
}

// A sequence's logits are bit for bit the same whether it is computed alone
// one token at a time or in passes with other sequences that join and leave,
// with its prompt cut into chunks of any size, forked from a shared prefix
// or not, with either cache type, on the weights as the file holds them and
// repacked, wherever the kernel level keeps the model's products batch
// invariant (Model.BatchInvariant).
func TestStepMatchesAlone(t *testing.T) {
	best := kernels.ISA()
	eachLevel(t, func(t *testing.T) {
		for _, c := range []struct {
			preset, typ string
			repack      bool
			everyLevel  bool // also below the best level (generic: slow)
		}{
			{"q", "q4_k_m", false, false}, {"q", "q4_k_m", true, true}, {"tiny", "q8_0", false, false}, {"gqa", "q8_0", true, false},
			{"tiny", "f32", false, false}, {"gqa", "bf16", false, false}, {"gqa", "f16", false, false}, {"q", "q6_k", true, false},
			{"q", "q5_k", false, false}, {"q", "q4_0", false, false},
			// Every matrix repackable (8 heads: the gate too), as in the
			// 1.7B: the agent's weights at the levels that claim only the
			// interleaved K-quants (avx512).
			{"gqa", "q4_k_m", true, false},
		} {
			if !c.everyLevel && kernels.ISA() != best {
				continue
			}
			for _, kv := range []KVType{KVF16, KVF32} {
				if kv == KVF32 && kernels.ISA() != best {
					continue
				}
				name := fmt.Sprintf("%s-%s repack=%v kv=%s", c.preset, c.typ, c.repack, kv)
				m := randomModel(t, c.preset, c.typ, 21)
				if c.repack {
					repackAll(t, m)
				}
				if !m.BatchInvariant() {
					t.Logf("%s: not checked, level %s does not keep all its products batch invariant", name, kernels.ISA())
					continue
				}
				cfg := m.Config
				r := rand.New(rand.NewPCG(uint64(len(name)), uint64(kv)))
				prefixToks := randomTokens(2*cfg.Window+3, cfg.Vocab, 77)
				// The batched engine: 3 threads (other row chunks than
				// alone), a small ring slack so rings wrap, chunks of 16.
				opts := Options{Threads: 3, KV: kv, Batch: 16, slack: 17}
				e, _ := NewEngine(m, opts)
				ps := e.NewSeq()
				if _, err := e.engine.evalSeq(context.Background(), ps, prefixToks, LogitsNone, nil); err != nil {
					t.Fatal(err)
				}
				prefix, err := ps.Share()
				if err != nil {
					t.Fatal(err)
				}
				plan := plans(r, 7, cfg.Vocab, cfg.Window, prefixToks)
				got := runMixed(t, e, r, plan, prefix)
				e.Close()
				alone := func(toks []int) [][]float32 {
					return aloneLogits(t, m, Options{Threads: 1, KV: kv, slack: 17}, toks)
				}
				checkSame(t, name, plan, got, alone, func(i int) int {
					if plan[i].fork {
						return len(prefixToks)
					}
					return 0
				})
			}
		}
	})
}

// The same on the full-size model named by DROIDGO_BENCH_MODEL (e.g. the
// random 1.7B Q4_K_M): four sequences with prompts of 20-90 tokens and a
// few decoded tokens, in mixed passes and alone.
func TestStepMatchesAloneFullSize(t *testing.T) {
	path := os.Getenv("DROIDGO_BENCH_MODEL")
	if path == "" {
		t.Skip("DROIDGO_BENCH_MODEL not set: no full-size model to check")
	}
	m, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.StartRepack(nil); err != nil {
		t.Fatal(err)
	}
	if err := m.WaitRepack(context.Background()); err != nil {
		t.Fatal(err)
	}
	m.adopt()
	eachLevel(t, func(t *testing.T) {
		if kernels.ISA() == "generic" {
			t.Skip("generic: the references row by row take over ten minutes for a full-size model; TestStepMatchesAlone covers the level")
		}
		skipVariant(t, m)
		r := rand.New(rand.NewPCG(5, 6))
		V := m.Config.Vocab
		var ps []seqPlan
		for i := range 4 {
			n := 20 + r.IntN(70)
			ps = append(ps, seqPlan{toks: randomTokens(n+4, V, uint64(i)), prompt: n, join: i % 2})
		}
		e, _ := NewEngine(m, Options{Threads: 2, Batch: 32, MaxContext: 256})
		got := runMixed(t, e, r, ps, nil)
		e.Close()
		// Alone: the prompt in one chunk, then token by token (only the
		// last prompt position and the decoded ones are compared).
		for i, p := range ps {
			a, _ := NewEngine(m, Options{Threads: 2, MaxContext: 256})
			lg, err := a.Eval(context.Background(), p.toks[:p.prompt], LogitsLast)
			if err != nil {
				t.Fatal(err)
			}
			want := [][]float32{lg}
			for _, tok := range p.toks[p.prompt:] {
				lg, err := a.Eval(context.Background(), []int{tok}, LogitsLast)
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, lg)
			}
			a.Close()
			for k, w := range want {
				pos := p.prompt - 1 + k
				if pos >= len(got[i]) {
					break
				}
				for v := range w {
					if math.Float32bits(got[i][pos][v]) != math.Float32bits(w[v]) {
						t.Fatalf("sequence %d position %d token %d: %v in the batch, %v alone", i, pos, v, got[i][pos][v], w[v])
					}
				}
			}
		}
	})
}

// prefixSum hashes every byte of a prefix's own buffers.
func prefixSum(p *Prefix) uint64 {
	h := fnv.New64a()
	for _, bufs := range [][]kvBuf{p.full, p.win} {
		for _, b := range bufs {
			for _, f := range b.k {
				fmt.Fprint(h, math.Float32bits(f))
			}
			for _, f := range b.v {
				fmt.Fprint(h, math.Float32bits(f))
			}
			h.Write(b.k16)
			h.Write(b.v16)
		}
	}
	return h.Sum64()
}

// A shared prefix is never written through: sequences forked from it (and
// from a prefix of one of them) extend, wrap their rings, truncate back to
// the fork point and past it, restore states and close, and the prefix's
// bytes do not change; a fork equals the prefix's tokens computed in place.
func TestPrefixIsReadOnly(t *testing.T) {
	for _, kv := range []KVType{KVF16, KVF32} {
		m := randomModel(t, "gqa", "q8_0", 4)
		W, V := m.Config.Window, m.Config.Vocab
		e, _ := NewEngine(m, Options{KV: kv, slack: 3, Batch: 4})
		ctx := context.Background()
		toks := randomTokens(3*W+2, V, 1)
		s := e.NewSeq()
		if _, err := e.engine.evalSeq(ctx, s, toks, LogitsNone, nil); err != nil {
			t.Fatal(err)
		}
		p, err := s.Share()
		if err != nil {
			t.Fatal(err)
		}
		if s.Shared() != len(toks) || s.Len() != len(toks) {
			t.Fatalf("after Share the sequence holds %d positions, %d shared", s.Len(), s.Shared())
		}
		sum := prefixSum(p)
		more := randomTokens(4*W, V, 2)
		var forks []*Seq
		for i := range 3 {
			f, err := e.Fork(p)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.engine.evalSeq(ctx, f, more[:W+i*5], LogitsLast, nil); err != nil {
				t.Fatal(err)
			}
			forks = append(forks, f)
		}
		// A prefix of a fork: a chain of two.
		p2, err := forks[0].Share()
		if err != nil {
			t.Fatal(err)
		}
		sum2 := prefixSum(p2)
		g, _ := e.Fork(p2)
		if _, err := e.engine.evalSeq(ctx, g, more[:2*W], LogitsAll, nil); err != nil {
			t.Fatal(err)
		}
		if n := forks[1].Truncate(forks[1].Len() - 2); n != len(toks)+W+3 {
			t.Errorf("truncating a fork by 2 kept %d", n)
		}
		short, _ := e.Fork(p)
		if _, err := e.engine.evalSeq(ctx, short, more[:5], LogitsLast, nil); err != nil {
			t.Fatal(err)
		}
		if n := short.Truncate(len(toks) + 2); n != len(toks)+2 {
			t.Errorf("truncating a fork to just after its prefix kept %d", n)
		}
		if _, err := e.engine.evalSeq(ctx, short, more[:W], LogitsLast, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := e.engine.evalSeq(ctx, forks[1], more[:W], LogitsLast, nil); err != nil {
			t.Fatal(err)
		}
		if n := forks[2].Truncate(len(toks) - 1); n != 0 {
			t.Errorf("truncating a fork into its prefix kept %d positions, want 0", n)
		}
		if _, err := e.engine.evalSeq(ctx, forks[2], more[:2*W], LogitsLast, nil); err != nil {
			t.Fatal(err)
		}
		st := forks[1].Save()
		if err := g.Restore(st); err != nil {
			t.Fatal(err)
		}
		for _, f := range forks {
			f.Close()
		}
		if prefixSum(p) != sum || prefixSum(p2) != sum2 {
			t.Errorf("%s: a shared prefix was written through", kv)
		}
		// A fork computes what the whole sequence computed in one place.
		f, _ := e.Fork(p)
		got, err := e.engine.evalSeq(ctx, f, more[:W+3], LogitsAll, nil)
		if err != nil {
			t.Fatal(err)
		}
		ref, _ := NewEngine(m, Options{KV: kv, slack: 3, Batch: 4})
		if err := ref.Prefill(ctx, toks); err != nil {
			t.Fatal(err)
		}
		want, err := ref.Eval(ctx, more[:W+3], LogitsAll)
		if err != nil {
			t.Fatal(err)
		}
		if d := maxDiff32(got, want); d != 0 {
			t.Errorf("%s: a fork differs from the sequence computed in place by %g", kv, d)
		}
		// A prefix from a saved state computes the same.
		p3, err := e.NewPrefix(p.State())
		if err != nil {
			t.Fatal(err)
		}
		f3, _ := e.Fork(p3)
		got3, err := e.engine.evalSeq(ctx, f3, more[:W+3], LogitsAll, nil)
		if err != nil {
			t.Fatal(err)
		}
		if d := maxDiff32(got3, want); d != 0 {
			t.Errorf("%s: a fork of a restored prefix differs by %g", kv, d)
		}
		if p.Bytes() <= 0 || p3.Bytes() != p.Bytes() {
			t.Errorf("prefix bytes %d, restored %d", p.Bytes(), p3.Bytes())
		}
		ref.Close()
		e.Close()
	}
}

// Goroutines driving their own sequences through one Scheduler get what
// each sequence computes alone; passes take several sequences at once; an
// Eval whose context ends returns at once, and the sequence can then be
// closed; a newcomer's long prompt does not hold the others back for more
// than one chunk per pass. Where the level keeps the model's products batch
// invariant only: elsewhere a token's last bits depend on how many tokens
// its pass held (which kernel computed it), so a greedy token may differ
// from the one computed alone (seen at avx512 on a loaded Zen 5, with the
// Q4_K weights in the file's layout).
func TestSchedulerConcurrent(t *testing.T) {
	eachLevel(t, testSchedulerConcurrent)
}

func testSchedulerConcurrent(t *testing.T) {
	m := randomModel(t, "q", "q4_k_m", 8)
	skipVariant(t, m)
	V := m.Config.Vocab
	e, _ := NewEngine(m, Options{Threads: 2, Batch: 8})
	s, err := NewScheduler(e)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewScheduler(e); err == nil {
		t.Error("a second scheduler for the same engine was allowed")
	}
	const n = 6
	// The first pass waits until every goroutine's prompt is queued, so
	// that it takes several sequences whatever the goroutines' timing: on
	// a 2-CPU host the engine's polling workers could hold both CPUs while
	// one goroutine after another ran alone (1 run in about 60).
	var first sync.Once
	s.mu.Lock()
	s.beforePass = func() {
		first.Do(func() {
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
				s.mu.Lock()
				queued := len(s.queue)
				s.mu.Unlock()
				if queued >= n {
					return
				}
				if time.Now().After(deadline) {
					t.Errorf("after 10 s only %d of %d prompts were queued", queued, n)
					return
				}
			}
		})
	}
	s.mu.Unlock()
	prompts := make([][]int, n)
	for i := range prompts {
		prompts[i] = randomTokens(5+7*i, V, uint64(i))
	}
	results := make([][]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seq := e.NewSeq()
			defer seq.Close()
			var out []int
			lg, err := s.Eval(context.Background(), seq, prompts[i], LogitsLast, nil)
			for k := 0; err == nil && k < 6; k++ {
				best := argmax(lg)
				out = append(out, best)
				lg, err = s.Eval(context.Background(), seq, []int{best}, LogitsLast, lg)
			}
			if err != nil {
				t.Error(err)
			}
			results[i] = out
			s.Release(seq)
		}()
	}
	wg.Wait()
	st := s.Stats()
	multi := int64(0)
	for k := 1; k < len(st.Rows); k++ {
		multi += st.Rows[k]
	}
	if multi == 0 {
		t.Errorf("no pass took more than one sequence: %+v", st)
	}
	// A cancelled Eval returns at once, its job still queued and then
	// dropped; the sequence closes cleanly. The context ends before the
	// call: cancelled after a sleep, the 600 tokens were sometimes all
	// evaluated first on a fast host and Eval rightly returned their
	// logits.
	seq := e.NewSeq()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := s.Eval(ctx, seq, randomTokens(600, V, 9), LogitsLast, nil)
		errc <- err
	}()
	select {
	case err := <-errc:
		if err != context.Canceled {
			t.Errorf("cancelled Eval returned %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a cancelled Eval did not return")
	}
	seq.Close()
	if _, err := s.Eval(context.Background(), seq, []int{1}, LogitsLast, nil); err != ErrSeqClosed {
		t.Errorf("Eval on a closed sequence: %v", err)
	}
	s.Close()
	if _, err := s.Eval(context.Background(), e.NewSeq(), []int{1}, LogitsLast, nil); err != ErrSchedulerClosed {
		t.Errorf("Eval after Close: %v", err)
	}
	e.Close()
	// Alone, with the engine's own Generate.
	for i := range n {
		a, _ := NewEngine(m, Options{Threads: 1})
		want, err := a.Generate(context.Background(), prompts[i], 7)
		if err != nil {
			t.Fatal(err)
		}
		a.Close()
		if fmt.Sprint(want[:6]) != fmt.Sprint(results[i]) {
			t.Errorf("sequence %d: %v with the others, %v alone", i, results[i], want[:6])
		}
	}
}
