package spark

import (
	"bufio"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/droidgo/droidgo/internal/cpuset"
)

// spinRounds is how many times an idle worker polls the epoch before it
// parks: about half a millisecond, so that workers stay hot through a whole
// Eval and from one decoded token to the next (the caller's work between
// two tokens, sampling and streaming, can outlast 30 us); between turns
// they park and cost nothing
// (ggml's "poll then sleep"). A worker also waits that long while the last
// chunk of a prefill step (up to ~2 ms) or the serial work between steps
// runs on another. At 2^15 rounds (~30 us) it parked there, and every
// futex wake-up that followed cost so much on the 2-vCPU AMX guest that
// 2^19 prefilled 2,017 tokens 10-18 % faster and decoded 10-17 % faster
// (docs/PERFORMANCE.md).
const spinRounds = 1 << 19

// waitRounds is how long the dispatcher polls for late workers before it
// parks: a few hundred microseconds, longer than the imbalance of a step
// (one chunk, ~30-300 us) and short against a scheduler time slice.
// Measured on the 2-core VM: parking after 2^14 rounds instead cost ~25 %
// of decode speed (a futex wake-up per step).
const waitRounds = 1 << 18

// pool is a persistent set of worker goroutines that run the engine's
// current step together with the calling goroutine (worker 0). A dispatch
// is one atomic epoch bump; completion is an atomic counter. Nothing is
// allocated per dispatch.
type pool struct {
	threads int
	// cpus, when set, are the CPUs every worker's thread is pinned to
	// (the fastest cores; see internal/cpuset). The dispatching goroutine
	// (worker 0) is held on a pinned thread for each forward pass (hold).
	cpus []int
	// pinErr is the first error pinning a thread met (the workers then
	// run unpinned).
	pinErr atomic.Pointer[error]
	// job is the engine whose step runs. It is cleared after every dispatch
	// so that parked workers hold no reference to the engine and an
	// abandoned engine can be collected (its cleanup stops the pool).
	job      atomic.Pointer[engine]
	epoch    atomic.Uint64
	done     atomic.Int64
	sleepers atomic.Int32
	waiting  atomic.Bool // the dispatcher parked waiting for done
	stopped  atomic.Bool
	mu       sync.Mutex
	cond     *sync.Cond // workers park here
	doneCond *sync.Cond // the dispatcher parks here
}

func newPool(threads int, cpus []int) *pool {
	if threads <= 0 && len(cpus) > 0 {
		threads = len(cpus)
	}
	if threads <= 0 {
		threads = DefaultThreads()
	}
	p := &pool{threads: threads, cpus: cpus}
	p.cond = sync.NewCond(&p.mu)
	p.doneCond = sync.NewCond(&p.mu)
	for w := 1; w < threads; w++ {
		go p.worker(w)
	}
	return p
}

func (p *pool) worker(w int) {
	// A worker that migrates between OS threads mid-step loses its caches;
	// pinning the goroutine keeps it on one thread the scheduler can keep
	// on one core.
	runtime.LockOSThread()
	if p.cpus == nil {
		defer runtime.UnlockOSThread()
	}
	// A pinned thread is not given back to the runtime for other
	// goroutines: it ends with its worker (Go ends a locked thread whose
	// goroutine exits).
	p.pin(p.cpus)
	var seen uint64
	for {
		spins := 0
		for p.epoch.Load() == seen {
			if p.stopped.Load() {
				return
			}
			if spins++; spins < spinRounds {
				continue
			}
			p.mu.Lock()
			p.sleepers.Add(1)
			for p.epoch.Load() == seen && !p.stopped.Load() {
				p.cond.Wait()
			}
			p.sleepers.Add(-1)
			p.mu.Unlock()
		}
		if p.stopped.Load() {
			return
		}
		// The dispatcher waits for every worker before the next bump, so
		// exactly one epoch passed.
		seen++
		p.job.Load().work(w)
		if p.done.Add(1) == int64(p.threads-1) && p.waiting.Load() {
			p.mu.Lock()
			p.doneCond.Signal()
			p.mu.Unlock()
		}
	}
}

// run executes e.work on every worker and returns when all have finished.
func (p *pool) run(e *engine) {
	if p.threads == 1 {
		e.work(0)
		return
	}
	p.job.Store(e)
	p.done.Store(0)
	p.epoch.Add(1)
	if p.sleepers.Load() > 0 {
		p.mu.Lock()
		p.cond.Broadcast()
		p.mu.Unlock()
	}
	e.work(0)
	want := int64(p.threads - 1)
	for spins := 0; p.done.Load() != want; spins++ {
		if spins < waitRounds {
			continue
		}
		// A worker is late: it is probably not running because other
		// processes hold the cores. Spinning would take the core it
		// needs, so park until the last one finishes.
		p.mu.Lock()
		p.waiting.Store(true)
		for p.done.Load() != want {
			p.doneCond.Wait()
		}
		p.waiting.Store(false)
		p.mu.Unlock()
	}
	p.job.Store(nil)
}

// hold keeps the calling goroutine, which computes as worker 0, on one OS
// thread pinned to the pool's CPUs until the returned func is called (at
// the end of a forward pass), which gives the thread back to the runtime
// with the CPUs it had: the caller's other goroutines keep running
// anywhere. Three system calls a pass; nothing without CPUs.
func (p *pool) hold() (release func()) {
	if p.cpus == nil {
		return func() {}
	}
	runtime.LockOSThread()
	was, err := cpuset.Allowed()
	if err != nil {
		p.pinErr.CompareAndSwap(nil, &err)
		return runtime.UnlockOSThread
	}
	p.pin(p.cpus)
	return func() {
		p.pin(was)
		runtime.UnlockOSThread()
	}
}

// pin restricts the calling thread to cpus (none: leaves it).
func (p *pool) pin(cpus []int) {
	if cpus == nil {
		return
	}
	if err := cpuset.Pin(cpus); err != nil {
		p.pinErr.CompareAndSwap(nil, &err)
	}
}

// PinError reports why the engine's threads could not be pinned to their
// CPUs (nil: they were, or no CPUs were asked for).
func (p *pool) PinError() error {
	if e := p.pinErr.Load(); e != nil {
		return *e
	}
	return nil
}

// stop ends the workers; the pool must not be used afterwards.
func (p *pool) stop() {
	if p.stopped.Swap(true) {
		return
	}
	p.mu.Lock()
	p.cond.Broadcast()
	p.mu.Unlock()
}

var (
	physOnce  sync.Once
	physCores int
)

// DefaultThreads is the default number of engine threads: the physical
// cores (SMT siblings share the execution units a matrix-vector product
// saturates, so they add contention, not speed). On Linux it counts the
// distinct (physical id, core id) pairs of /proc/cpuinfo; elsewhere, or if
// that fails, it is runtime.NumCPU(). It is never more than NumCPU (a
// container may be limited to fewer CPUs than the machine has).
func DefaultThreads() int {
	physOnce.Do(func() {
		physCores = runtime.NumCPU()
		if n := countPhysicalCores("/proc/cpuinfo"); n > 0 && n < physCores {
			physCores = n
		}
	})
	return physCores
}

// countPhysicalCores returns the number of distinct (physical id, core id)
// pairs in a /proc/cpuinfo-style file, or 0 if it has none.
func countPhysicalCores(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	type key struct{ pkg, core string }
	seen := map[key]bool{}
	var cur key
	var havePkg, haveCore bool
	flush := func() {
		if havePkg && haveCore {
			seen[cur] = true
		}
		cur, havePkg, haveCore = key{}, false, false
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "physical id":
			cur.pkg, havePkg = strings.TrimSpace(v), true
		case "core id":
			cur.core, haveCore = strings.TrimSpace(v), true
		}
	}
	flush()
	return len(seen)
}
