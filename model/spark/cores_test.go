package spark

import (
	"context"
	"math"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/droidgo/droidgo/internal/cpuset"
)

// TestSlowWorkerDoesNotGate runs the engine's passes (every matrix product,
// attention, the head) with four workers, one of them 2 or 4 times slower
// than the others, as a phone's slower core would be, on a virtual clock:
// a worker may take a chunk only when it is the one that would come free
// first (the least virtual time, ties to the lowest worker), and a chunk
// it takes costs it 1 unit, or the slow worker's cost. The real threads
// compute the chunks as fast as the host lets them; the virtual clock alone
// orders who takes what, so the result does not depend on the host's load.
//
// A pass then takes its makespan in units (the largest virtual time). With
// chunks taken as workers come free it is bounded by (n-1)/S + cost, S
// the workers' summed speed (each worker is busy until the last chunk is
// taken): near the fast workers' share of n/4. Fixed shares (each worker
// its quarter) would take cost x n/4: the test fails for a pool that splits
// work so. The logits must equal one thread's: a token's numbers do not
// depend on which worker computed which rows.
func TestSlowWorkerDoesNotGate(t *testing.T) {
	m := randomModel(t, "q", "q4_k_m", 1)
	toks := randomTokens(24, m.Config.Vocab, 5)
	ctx := context.Background()
	one, err := NewEngine(m, Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	want, err := one.Eval(ctx, toks, LogitsAll)
	if err != nil {
		t.Fatal(err)
	}
	// Decode steps too: their passes have the fewest chunks.
	for _, tok := range toks[:4] {
		if _, err := one.Eval(ctx, []int{tok}, LogitsLast); err != nil {
			t.Fatal(err)
		}
	}
	wantDecode, _ := one.Eval(ctx, toks[4:5], LogitsLast)
	one.Close()

	for _, tc := range []struct {
		slow, cost int
		limit      float64 // the passes' summed makespan over the fast share
	}{
		// Ties in virtual time go to the lower worker: the slow one last
		// (3), or first (0, the dispatching goroutine), which costs more.
		{slow: 3, cost: 2, limit: 1.75},
		{slow: 0, cost: 2, limit: 1.75},
		{slow: 3, cost: 4, limit: 2.5},
		{slow: 0, cost: 4, limit: 2.5},
	} {
		const threads = 4
		e, err := NewEngine(m, Options{Threads: threads})
		if err != nil {
			t.Fatal(err)
		}
		vc := newVirtualClock(e, threads, tc.slow, tc.cost)
		e.takeHook = vc.take
		got, err := e.Eval(ctx, toks, LogitsAll)
		if err != nil {
			t.Fatal(err)
		}
		for _, tok := range toks[:4] {
			if _, err := e.Eval(ctx, []int{tok}, LogitsLast); err != nil {
				t.Fatal(err)
			}
		}
		gotDecode, _ := e.Eval(ctx, toks[4:5], LogitsLast)
		e.takeHook = nil
		e.Close()
		if !slices.Equal(got, want) || !slices.Equal(gotDecode, wantDecode) {
			t.Fatalf("worker %d %dx slower: the logits differ from one thread's", tc.slow, tc.cost)
		}
		vc.end()
		var span, share, fixed float64
		slowPieces, pieces := 0, 0
		for _, p := range vc.passes {
			S := float64(threads-1) + 1/float64(tc.cost)
			if bound := float64(p.n-1)/S + float64(tc.cost); float64(p.makespan) > bound+1e-9 {
				t.Errorf("worker %d %dx slower: a pass of %d chunks took %d units, more than (n-1)/S + cost = %.2f (taken %v)",
					tc.slow, tc.cost, p.n, p.makespan, bound, p.taken)
			}
			span += float64(p.makespan)
			share += math.Ceil(float64(p.n) / threads)
			fixed += float64(tc.cost) * math.Ceil(float64(p.n)/threads)
			slowPieces += p.taken[tc.slow]
			pieces += p.n
		}
		if len(vc.passes) < 50 {
			t.Fatalf("only %d passes seen", len(vc.passes))
		}
		rel := span / share
		t.Logf("worker %d %dx slower: %d passes, %d chunks (the slow worker took %.1f %%); passes took %.2fx the fast share (fixed shares: %.2fx)",
			tc.slow, tc.cost, len(vc.passes), pieces, 100*float64(slowPieces)/float64(pieces), rel, fixed/share)
		if rel > tc.limit {
			t.Errorf("worker %d %dx slower: passes took %.2fx the fast workers' share (limit %.2fx): the slow worker gates them", tc.slow, tc.cost, rel, tc.limit)
		}
	}
}

// virtualClock orders the chunks the workers of an engine take by virtual
// time (see TestSlowWorkerDoesNotGate); take is the engine's takeHook.
type virtualClock struct {
	e          *Engine
	slow, cost int
	mu         sync.Mutex
	cond       *sync.Cond
	epoch      uint64
	t, taken   []int
	done       []bool
	busy       bool // a worker is between its two calls of take
	n          int
	passes     []vpass
}

type vpass struct {
	n, makespan int
	taken       []int
}

func newVirtualClock(e *Engine, threads, slow, cost int) *virtualClock {
	vc := &virtualClock{e: e, slow: slow, cost: cost, t: make([]int, threads), taken: make([]int, threads), done: make([]bool, threads)}
	vc.cond = sync.NewCond(&vc.mu)
	return vc
}

func (vc *virtualClock) take(w, ch int) {
	vc.mu.Lock()
	defer vc.mu.Unlock()
	if ch < 0 {
		// Every worker runs every dispatch and the dispatcher waits for
		// all of them, so the first call of a new epoch starts a pass.
		if ep := vc.e.pool.epoch.Load(); ep != vc.epoch {
			vc.end()
			vc.epoch, vc.n = ep, vc.e.cur.nchunks
		}
		for vc.busy || vc.next() != w {
			vc.cond.Wait()
		}
		vc.busy = true
		return
	}
	if ch >= vc.n {
		vc.done[w] = true
	} else {
		vc.t[w] += map[bool]int{true: vc.cost, false: 1}[w == vc.slow]
		vc.taken[w]++
	}
	vc.busy = false
	vc.cond.Broadcast()
}

// next is the worker that comes free first among those still taking.
func (vc *virtualClock) next() int {
	best := -1
	for w := range vc.t {
		if !vc.done[w] && (best < 0 || vc.t[w] < vc.t[best]) {
			best = w
		}
	}
	return best
}

// end records the pass that ran, if any, and clears the clock.
func (vc *virtualClock) end() {
	if vc.n > 0 {
		p := vpass{n: vc.n, makespan: slices.Max(vc.t), taken: slices.Clone(vc.taken)}
		vc.passes = append(vc.passes, p)
	}
	vc.n = 0
	clear(vc.t)
	clear(vc.taken)
	clear(vc.done)
}

// TestPoolPins: with CPUs set, every worker's thread and the dispatching
// thread compute pinned to them (sched_setaffinity), and the dispatching
// thread gets its own CPUs back after the pass, so the caller's other
// goroutines are not confined to the engine's cores.
func TestPoolPins(t *testing.T) {
	if !cpuset.CanPin {
		t.Skip("threads are not pinned on this OS")
	}
	allowed, err := cpuset.Allowed()
	if err != nil || len(allowed) < 2 {
		t.Skipf("fewer than 2 CPUs to pin to: %v %v", allowed, err)
	}
	cpus := allowed[len(allowed)-1:]
	p := newPool(3, cpus)
	defer p.stop()
	e := &engine{pool: p}
	var mu sync.Mutex
	masks := map[int][]int{}
	e.takeHook = func(w, ch int) {
		if ch < 0 || ch >= e.cur.nchunks {
			return
		}
		got, err := cpuset.Allowed()
		if err != nil {
			t.Error(err)
		}
		mu.Lock()
		masks[w] = got
		mu.Unlock()
	}
	var before, after []int
	done := make(chan struct{})
	go func() {
		defer close(done)
		// One thread for the whole check; it ends with this goroutine
		// (locked, never unlocked), whatever the pool left on it.
		runtime.LockOSThread()
		before, _ = cpuset.Allowed()
		// All on one CPU, the dispatcher can take every chunk of a pass
		// before a woken worker gets the CPU, so passes repeat until each
		// worker took one (bounded, for a loaded machine).
		seen := func() int {
			mu.Lock()
			defer mu.Unlock()
			return len(masks)
		}
		deadline := time.Now().Add(10 * time.Second)
		for seen() < 3 && time.Now().Before(deadline) {
			e.cur.counts = make([]int32, 64)
			release := p.hold()
			e.dispatch(stepTest, 64)
			release()
		}
		after, _ = cpuset.Allowed()
	}()
	<-done
	if err := p.PinError(); err != nil {
		t.Fatalf("pinning failed: %v", err)
	}
	for w, m := range masks {
		if !slices.Equal(m, cpus) {
			t.Errorf("worker %d ran with affinity %v, want %v", w, m, cpus)
		}
	}
	if _, ok := masks[0]; !ok || len(masks) < 2 {
		t.Errorf("workers seen: %v, want the dispatcher (0) and others", masks)
	}
	if !slices.Equal(before, after) || !slices.Equal(before, allowed) {
		t.Errorf("the dispatching thread had CPUs %v before the passes and %v after, want %v", before, after, allowed)
	}
	// The engine takes the CPUs as Options, reports them, and computes
	// what an unpinned engine computes.
	m := randomModel(t, "tiny", "q8_0", 1)
	toks := randomTokens(6, m.Config.Vocab, 2)
	free, err := NewEngine(m, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := free.Eval(context.Background(), toks, LogitsAll)
	free.Close()
	eng, err := NewEngine(m, Options{CPUs: cpus, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	if eng.Threads() != 2 || !slices.Equal(eng.CPUs(), cpus) {
		t.Errorf("engine with CPUs %v: %d threads on %v", cpus, eng.Threads(), eng.CPUs())
	}
	got, err := eng.Eval(context.Background(), toks, LogitsAll)
	if err != nil || !slices.Equal(got, want) || eng.PinError() != nil {
		t.Errorf("pinned engine: %v, pin error %v, logits equal %v", err, eng.PinError(), slices.Equal(got, want))
	}
	if now, _ := cpuset.Allowed(); !slices.Equal(now, allowed) {
		t.Errorf("after a pinned engine's Eval this goroutine runs on %v, want %v", now, allowed)
	}
	if _, err := NewEngine(m, Options{CPUs: []int{-1}}); err == nil {
		t.Error("NewEngine accepted CPU -1")
	}
}
