package spark

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/droidgo/droidgo/model/kernels"
)

// weights returns pointers to every weight matrix of the model (the tied
// output head appears once, as Embed).
func (m *Model) weights() []*Weight {
	ws := []*Weight{&m.Embed}
	if unsafe.SliceData(m.Output.Data) != unsafe.SliceData(m.Embed.Data) {
		ws = append(ws, &m.Output)
	}
	for i := range m.Layers {
		L := &m.Layers[i]
		ws = append(ws, &L.QKV, &L.Gate, &L.Out, &L.FFNGate, &L.FFNUp, &L.FFNDown)
	}
	return ws
}

// BatchInvariant reports whether, at the kernel level in use, the products
// of every weight matrix of the model, in its present layout, give a token
// the same bits whether it is computed alone or with other tokens
// (kernels.BatchInvariantFor): then the engine's outputs for a sequence do
// not depend on the sequences and chunks that share its passes. Repacking
// can change the answer (avx512 keeps the interleaved K-quants invariant,
// not the file's layout).
func (m *Model) BatchInvariant() bool {
	for _, w := range m.weights() {
		if !kernels.BatchInvariantFor(w.Type, w.x8) {
			return false
		}
	}
	return true
}

// Preload copies the weights from the file mapping into anonymous memory
// (with transparent huge pages requested on Linux) and releases the file
// pages from this process, returning the bytes copied. Reading weights from
// 4 KiB page-cache pages costs a TLB miss every 4 KiB, which on some
// machines slows decoding by 10 %; anonymous huge pages avoid it at the
// price of a copy at load (page faults of fresh memory, 1-2 s per GB on a
// VM) and memory that is no longer shared with other processes.
func (m *Model) Preload() (int64, error) {
	if m.rp != nil {
		return 0, fmt.Errorf("preload weights: they are being repacked")
	}
	if m.preloaded {
		return 0, nil
	}
	return m.preload()
}

// moved is a weight's new home.
type moved struct {
	w  *Weight
	nd []byte
	x8 bool
}

// piece is a range of rows of one weight copied by one worker: rows r0 to
// r1 of the i-th weight moved.
type piece struct {
	*moved
	i, r0, r1 int
}

// pieceBytes bounds a piece so that the workers share big matrices and the
// file pages are released soon after they are copied.
const pieceBytes = 4 << 20

// cut splits the weights of mv into pieces of about pieceBytes, each a
// whole multiple of align rows (the last of a weight excepted).
func cut(mv []moved, align int) []piece {
	var pieces []piece
	for i := range mv {
		w := mv[i].w
		step := w.Rows
		if rb := w.rowBytes; rb > 0 {
			step = max(align, pieceBytes/rb/align*align)
		}
		for r := 0; r < w.Rows; r += step {
			pieces = append(pieces, piece{&mv[i], i, r, min(w.Rows, r+step)})
		}
	}
	return pieces
}

// runPieces runs do over the pieces, in their order, on up to workers
// goroutines, and returns the first error of do, or ctx's once it is done
// (the pieces not started by then are not run).
func runPieces(ctx context.Context, workers int, pieces []piece, do func(piece) error) error {
	var (
		mu    sync.Mutex
		next  int
		first error
		wg    sync.WaitGroup
	)
	for range max(1, min(workers, len(pieces))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if first == nil {
					first = ctx.Err()
				}
				i := next
				next++
				stop := first != nil || i >= len(pieces)
				mu.Unlock()
				if stop {
					return
				}
				if err := do(pieces[i]); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

func (m *Model) preload() (int64, error) {
	ws := m.weights()
	var total int
	for _, w := range ws {
		total += (len(w.Data) + 63) &^ 63
	}
	if total == 0 {
		return 0, nil
	}
	buf, free, err := allocAnon(total)
	if err != nil {
		return 0, fmt.Errorf("preload weights: %w", err)
	}
	mv := make([]moved, len(ws))
	off := 0
	for i, w := range ws {
		n := len(w.Data)
		mv[i] = moved{w: w, nd: buf[off : off+n : off+n]}
		off += (n + 63) &^ 63
	}
	pieces := cut(mv, 1)
	// Page faults of the fresh memory dominate, and they scale with threads.
	runPieces(context.Background(), runtime.GOMAXPROCS(0), pieces, func(p piece) error {
		rb := p.w.rowBytes
		src := p.w.Data[p.r0*rb : p.r1*rb]
		copy(p.nd[p.r0*rb:p.r1*rb], src)
		if m.mapped {
			releasePages(src)
		}
		return nil
	})
	for _, d := range mv {
		if unsafe.SliceData(m.Output.Data) == unsafe.SliceData(d.w.Data) {
			m.Output.Data = d.nd // the tied head
		}
		d.w.Data = d.nd
	}
	prev := m.close
	m.close = func() error {
		err := free()
		if prev != nil {
			if e := prev(); err == nil {
				err = e
			}
		}
		return err
	}
	m.preloaded = true
	return int64(total), nil
}
