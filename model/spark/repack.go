package spark

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/droidgo/droidgo/model/kernels"
	"github.com/droidgo/droidgo/model/quant"
	"github.com/droidgo/droidgo/model/weightcache"
)

// Repacking runs in the background: the model is usable at once from the
// file mapping, one goroutine (every core for StartRepackNow) writes the
// interleaved copy of each matrix into anonymous memory, and every Eval
// first installs the matrices that are ready (between forward passes, never
// during one). So loading stays a matter of milliseconds while decoding
// reaches the interleaved kernels' speed as soon as the copy is done (1.1 GB
// on a 2-core Zen 5 VM: 0.6-2.3 s on one goroutine, 0.34-0.42 s on two).
type repacker struct {
	cancel context.CancelFunc
	done   chan struct{}
	free   func() error
	bytes  int64
	// kick starts the copy: closed after the first forward pass, by
	// WaitRepack, or after kickAfter, so that the first token (the
	// "load to first token" latency) does not share the CPU with it.
	kick   chan struct{}
	kicked sync.Once

	// committed is closed once a new cache entry is named (or given up).
	committed chan struct{}
	// cached is the cache file the weights were mapped from whole.
	cached string

	mu      sync.Mutex
	ready   []moved // finished, not installed yet
	err     error
	elapsed time.Duration
}

// canInterleave reports whether w has an interleaved layout the engine can
// use: whole 8-row groups, and row chunks (a head of QKV at most) that
// never split a group.
func (m *Model) canInterleave(w *Weight) bool {
	return !w.x8 && kernels.Repackable(w.Type) && w.Rows%kernels.Interleave == 0 &&
		w.Cols%quant.QK_K == 0 && m.Config.HeadDim%kernels.Interleave == 0
}

// StartRepack starts interleaving, in the background, every Q4_K, Q6_K and
// Q8_0 matrix for which this CPU has an interleaved kernel
// (kernels.RepackPays: Q4_K and Q6_K with AVX2, all three at the avxvnni
// level and on arm64 with dotprod),
// whose matrix-vector products are about twice as fast (AVX2: time; arm64
// dotprod and i8mm: instructions per decoded token, 822 M -> 442 M for the
// 1.7B Q4_K_M file under qemu, docs/PERFORMANCE.md). On amd64 the other
// matrices of a file mapping are copied as they are, like Preload does, so
// that all of them get huge pages (decoding Q8_0 measured ~15 % faster); on
// arm64 they stay in the page cache: phones reclaim anonymous memory first
// (zram, or killing the app) while clean file pages are simply dropped and
// read back, so only what a kernel measurably gains from becomes anonymous.
// On CPUs without interleaved kernels (arm64 without dotprod) it does
// nothing. It returns the bytes that will be moved (0: nothing to do)
// without waiting.
// The copy starts after the first forward pass of an engine (so that the
// first token does not share the CPU with it), and each matrix is swapped
// in by the next Eval once it is ready; the file pages are released as the
// copy goes, so memory stays about the file size.
// With a cache (nil: none), the copy lives in its file for the model's
// file, layout and CPU level, if it has one, and nothing is copied at all;
// else in a new one, when it can be made (this copy's bytes, synced and
// named once whole); else in anonymous memory. Either way the kernels see
// the same bytes.
// Calling it again, or after Preload, does nothing. Like Preload, it must
// not run while an engine of the model is inside Eval.
func (m *Model) StartRepack(cache *weightcache.Cache) (int64, error) {
	if !m.repackPays() {
		return 0, nil
	}
	return m.startRepack(m.paysToInterleave, runtime.GOARCH != "arm64", 1, cache)
}

// RepackBytes is the anonymous memory StartRepack would take on this CPU
// (0: no interleaved kernel pays here, or the weights were moved already),
// so a caller can see whether it fits before starting it.
func (m *Model) RepackBytes() int64 {
	if !m.repackPays() || m.rp != nil || m.preloaded {
		return 0
	}
	_, total := m.repackSet(m.paysToInterleave, runtime.GOARCH != "arm64")
	return int64(total)
}

func (m *Model) repackPays() bool {
	return kernels.RepackPays(quant.Q4_K) || kernels.RepackPays(quant.Q6_K) || kernels.RepackPays(quant.Q8_0)
}

func (m *Model) paysToInterleave(w *Weight) bool {
	return m.canInterleave(w) && kernels.RepackPays(w.Type)
}

// repackSet is what a repack moves: the matrices for which x8 is true,
// interleaved, then (copyRest) the others of a file mapping as they are;
// and the bytes they take, each 64-byte aligned.
func (m *Model) repackSet(x8 func(*Weight) bool, copyRest bool) ([]moved, int) {
	var mv, rest []moved
	for _, w := range m.weights() {
		if x8(w) {
			mv = append(mv, moved{w: w, x8: true})
		} else if copyRest && m.mapped {
			rest = append(rest, moved{w: w})
		}
	}
	mv = append(mv, rest...)
	total := 0
	for _, d := range mv {
		total += (len(d.w.Data) + 63) &^ 63
	}
	return mv, total
}

// StartRepackNow is StartRepack with the copy starting at once rather than
// after the first forward pass, on every core (GOMAXPROCS goroutines, like
// Preload: page faults of the fresh memory and the file pages are most of
// it, and they scale with threads): for a caller that waits for it to
// finish (WaitRepack) before computing anything, so that no forward pass
// shares the CPU with the copy or runs on a mix of layouts.
func (m *Model) StartRepackNow(cache *weightcache.Cache) (int64, error) {
	var n int64
	var err error
	if m.repackPays() {
		n, err = m.startRepack(m.paysToInterleave, runtime.GOARCH != "arm64", runtime.GOMAXPROCS(0), cache)
	}
	m.kickRepack()
	return n, err
}

// kickAfter is how long a background repack waits for the first forward
// pass before it starts anyway.
const kickAfter = 2 * time.Second

// kickRepack lets a waiting background repack start.
func (m *Model) kickRepack() {
	if rp := m.rp; rp != nil {
		rp.kicked.Do(func() { close(rp.kick) })
	}
}

// WaitRepack waits until a background repack has finished (at once if none
// was started) and returns its error, if any. The matrices are installed
// then, or by the next Eval if a forward pass is running.
func (m *Model) WaitRepack(ctx context.Context) error {
	rp := m.rp
	if rp == nil {
		return nil
	}
	m.kickRepack()
	select {
	case <-rp.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	// Install what is ready now unless a forward pass runs (the next one
	// does it then), so Numerics describes the layout from here on.
	m.adopt()
	rp.mu.Lock()
	defer rp.mu.Unlock()
	return rp.err
}

// RepackStats reports the bytes a background repack covers and, once it is
// done, how long it took (0 while it runs or when none was started).
func (m *Model) RepackStats() (bytes int64, took time.Duration) {
	if m.rp == nil {
		return 0, 0
	}
	m.rp.mu.Lock()
	defer m.rp.mu.Unlock()
	return m.rp.bytes, m.rp.elapsed
}

// startRepack moves the matrices for which x8 is true into the interleaved
// layout and, if copyRest is set, the others of a file mapping into
// anonymous memory as they are, on workers goroutines; or maps them from
// cache (nil: none).
func (m *Model) startRepack(x8 func(*Weight) bool, copyRest bool, workers int, cache *weightcache.Cache) (int64, error) {
	if m.rp != nil || m.preloaded {
		return 0, nil
	}
	mv, total := m.repackSet(x8, copyRest)
	if len(mv) == 0 {
		return 0, nil
	}
	mem, err := m.repackMemory(cache, mv, total)
	if err != nil {
		return 0, fmt.Errorf("repack weights: %w", err)
	}
	buf := mem.buf
	off := 0
	for i := range mv {
		n := len(mv[i].w.Data)
		mv[i].nd = buf[off : off+n : off+n]
		off += (n + 63) &^ 63
	}
	ctx, cancel := context.WithCancel(context.Background())
	rp := &repacker{cancel: cancel, done: make(chan struct{}), free: mem.free, bytes: int64(total), kick: make(chan struct{}), committed: make(chan struct{})}
	m.rp = rp
	if mem.hit {
		// Every matrix is ready as it is: the next Eval installs them all.
		rp.cached = mem.entry.Path
		rp.ready = mv
		m.pending.Store(true)
		close(rp.done)
		close(rp.committed)
		return int64(total), nil
	}
	// Pieces keep the workers responsive to Close and share big matrices
	// among them; a matrix is handed over once its last piece is done.
	pieces := cut(mv, kernels.Interleave)
	left := make([]atomic.Int32, len(mv))
	for _, p := range pieces {
		left[p.i].Add(1)
	}
	// The workers only read the weights' current Data, which nothing
	// changes until a matrix is handed over (adopt swaps after that).
	go func() {
		defer close(rp.committed)
		err := rp.run(ctx, func() error {
			return runPieces(ctx, workers, pieces, func(p piece) error {
				w, rb := p.w, p.w.rowBytes
				src, dst := w.Data[p.r0*rb:p.r1*rb], p.nd[p.r0*rb:p.r1*rb]
				if !p.x8 {
					copy(dst, src)
				} else if err := kernels.Repack(w.Type, dst, src, p.r1-p.r0, w.Cols); err != nil {
					return fmt.Errorf("repack %s: %w", w.Name, err)
				}
				// Dropping the file pages from this process keeps the
				// resident memory at about the file size; an engine still
				// reading them before adopt faults them back in from the
				// page cache.
				if m.mapped {
					releasePages(src)
				}
				if left[p.i].Add(-1) == 0 {
					rp.mu.Lock()
					rp.ready = append(rp.ready, *p.moved)
					rp.mu.Unlock()
					m.pending.Store(true)
				}
				return nil
			})
		})
		// A new cache entry is named once whole and on disk, after the
		// model has its weights (WaitRepack does not wait for the sync).
		if mem.entry != nil && err == nil {
			if err := mem.entry.Commit(); err != nil {
				warnCache(cache, err)
			}
		}
	}()
	return int64(total), nil
}

// run waits for the kick, then copies with do and records the outcome;
// done is closed when it returns, which is do's error.
func (rp *repacker) run(ctx context.Context, do func() error) error {
	defer close(rp.done)
	select {
	case <-rp.kick:
	case <-time.After(kickAfter):
	case <-ctx.Done():
		return ctx.Err()
	}
	start := time.Now()
	err := do()
	rp.mu.Lock()
	defer rp.mu.Unlock()
	switch {
	case ctx.Err() != nil: // closed: nothing to report
		return ctx.Err()
	case err != nil:
		rp.err = err
	default:
		rp.elapsed = time.Since(start)
	}
	return err
}

// repackMem is where a repack's copy goes.
type repackMem struct {
	buf   []byte
	free  func() error
	entry *weightcache.Mapping // the cache's entry, if the copy is in one
	hit   bool                 // the entry holds the copy already
}

// repackMemory finds the memory for a repack of mv (total bytes): the
// cache's entry for it when there is one (hit), else a new entry when one
// can be made, else anonymous memory. Cache trouble is told to its Warn,
// never an error: the copy still works from memory.
func (m *Model) repackMemory(cache *weightcache.Cache, mv []moved, total int) (repackMem, error) {
	if key := m.repackKey(cache, mv); key != "" {
		e, err := cache.Map(key, int64(total))
		if err == nil && e != nil {
			return repackMem{buf: e.Data, free: e.Close, entry: e, hit: true}, nil
		}
		if err == nil {
			e, err = cache.Create(key, filepath.Base(m.GGUF.Stat.Name()), int64(total))
		}
		if err == nil {
			return repackMem{buf: e.Data, free: e.Close, entry: e}, nil
		}
		warnCache(cache, fmt.Errorf("%w; the interleaved weights are copied to memory for this run", err))
	}
	buf, free, err := allocAnon(total)
	return repackMem{buf: buf, free: free}, err
}

// repackKey is the weights cache's key for a repack of mv: the model file's
// identity, the layout's version, the architecture, and each matrix moved
// ("" when there is no cache here, the weights are not a file's, or no
// matrix is interleaved: a plain copy of the file's bytes is not worth a
// file).
func (m *Model) repackKey(cache *weightcache.Cache, mv []moved) string {
	if cache == nil || !weightcache.Supported || !m.mapped || m.GGUF == nil {
		return ""
	}
	id := m.GGUF.Identity()
	if id == nil || !slices.ContainsFunc(mv, func(d moved) bool { return d.x8 }) {
		return ""
	}
	parts := [][]byte{id, fmt.Appendf(nil, "%s repack format %d", runtime.GOARCH, kernels.RepackFormat)}
	for _, d := range mv {
		w := d.w
		parts = append(parts, fmt.Appendf(nil, "%s %v %d %d %d x8=%t", w.Name, w.Type, w.Rows, w.Cols, len(w.Data), d.x8))
	}
	return weightcache.Key(parts...)
}

func warnCache(c *weightcache.Cache, err error) {
	if c.Warn != nil {
		c.Warn(err.Error())
	}
}

// RepackCached returns the weights cache file the interleaved weights were
// mapped from ("" when they were copied, or there was no repack).
func (m *Model) RepackCached() string {
	if m.rp == nil {
		return ""
	}
	return m.rp.cached
}

// adopt installs the repacked matrices that are ready, if no engine is
// inside a forward pass (it tries again at the next Eval otherwise).
func (m *Model) adopt() {
	if !m.pending.Load() || !m.evalMu.TryLock() {
		return
	}
	defer m.evalMu.Unlock()
	rp := m.rp
	rp.mu.Lock()
	ready := rp.ready
	rp.ready = nil
	m.pending.Store(false)
	rp.mu.Unlock()
	for _, d := range ready {
		old := d.w.Data
		if unsafe.SliceData(m.Output.Data) == unsafe.SliceData(old) {
			m.Output.Data, m.Output.x8 = d.nd, d.x8 // the tied head
		}
		d.w.Data, d.w.x8 = d.nd, d.x8
		if m.mapped {
			releasePages(old) // whatever an Eval faulted back in
		}
	}
}

// stopRepack stops a background repack and frees its memory; for Close.
func (m *Model) stopRepack() error {
	rp := m.rp
	if rp == nil {
		return nil
	}
	rp.cancel()
	<-rp.done
	<-rp.committed
	m.rp = nil
	return rp.free()
}
