package kernels

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/droidgo/droidgo/model/quant"
)

// BenchmarkStreamRead measures the memory-bandwidth ceiling the decode
// figures are compared with: every thread streams its own 256 MB matrix
// (far larger than any cache) through a kernel, all threads at once. "f32"
// is the plain read rate (MatVecF32 does one FMA per 4 bytes); the others
// show how close each weight type's kernel comes to it ("_x8": the
// interleaved layout the repack makes, which "q8_0_x8" is only at the levels
// that repack Q8_0). GB/s counts the bytes of all threads.
func BenchmarkStreamRead(b *testing.B) {
	const k = 2048
	x := make([]float32, k)
	var q8k [k / 256]quant.BlockQ8K
	var q80 [k / 32]quant.BlockQ8_0
	kinds := []struct {
		name     string
		rowBytes int
		mv       func(w []byte, rows int, out []float32)
	}{
		{"f32", 4 * k, func(w []byte, rows int, out []float32) { MatVecF32(w, rows, x, out) }},
		{"bf16", 2 * k, func(w []byte, rows int, out []float32) { MatVecBF16(w, rows, x, out) }},
		{"f16", 2 * k, func(w []byte, rows int, out []float32) { MatVecF16(w, rows, x, out) }},
		{"q8_0", quant.Q8_0.RowSize(k), func(w []byte, rows int, out []float32) { MatVecQ8_0(w, rows, q80[:], out) }},
		{"q4_k_x8", quant.Q4_K.RowSize(k), func(w []byte, rows int, out []float32) { MatVecQ4Kx8(w, rows, q8k[:], out) }},
		{"q6_k_x8", quant.Q6_K.RowSize(k), func(w []byte, rows int, out []float32) { MatVecQ6Kx8(w, rows, q8k[:], out) }},
	}
	if RepackPays(quant.Q8_0) { // the levels that decode Q8_0 from the interleaved layout
		kinds = append(kinds, struct {
			name     string
			rowBytes int
			mv       func(w []byte, rows int, out []float32)
		}{"q8_0_x8", quant.Q8_0.RowSize(k), func(w []byte, rows int, out []float32) { MatVecQ8_0x8(w, rows, q80[:], out) }})
	}
	for _, threads := range []int{1, 2} {
		for _, kd := range kinds {
			b.Run(fmt.Sprintf("%s/threads=%d", kd.name, threads), func(b *testing.B) {
				streamRead(b, threads, kd.rowBytes, kd.mv)
			})
		}
	}
}

// streamRead runs mv over a 256 MB matrix of rowBytes rows per thread, all
// threads at once, and reports the rate in bytes per second of wall time
// and of the threads' CPU time.
func streamRead(b *testing.B, threads, rowBytes int, mv func(w []byte, rows int, out []float32)) {
	const per = 256 << 20
	rows := per / rowBytes &^ 7
	ws := make([][]byte, threads)
	outs := make([][]float32, threads)
	for i := range ws {
		// Written, so that every page is real memory (untouched pages all
		// read the kernel's one zero page); bytes below 0x40 keep float
		// exponents finite.
		ws[i] = make([]byte, rows*rowBytes)
		for j := range ws[i] {
			ws[i][j] = byte(j) & 0x3f
		}
		outs[i] = make([]float32, rows)
	}
	b.SetBytes(int64(threads * rows * rowBytes))
	var cpu atomic.Int64 // the streaming threads' CPU time, ns
	for b.Loop() {
		var wg sync.WaitGroup
		for i := range threads {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				c0 := threadCPU()
				mv(ws[i], rows, outs[i])
				cpu.Add(int64(threadCPU() - c0))
			}()
		}
		wg.Wait()
	}
	// On a shared machine: the rate while the threads had their cores
	// (bytes over their mean CPU time).
	if c := time.Duration(cpu.Load()).Seconds() / float64(threads); c > 0 {
		b.ReportMetric(float64(b.N)*float64(threads*rows*rowBytes)/c/1e9, "GB/cpu-s")
	}
}
