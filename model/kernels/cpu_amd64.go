//go:build !purego

package kernels

import (
	"errors"
	"unsafe"

	"github.com/droidgo/droidgo/model/quant"
	"golang.org/x/sys/cpu"
)

// archLevels returns the assembly levels this CPU supports, lowest first:
// avx2 (AVX2+FMA+F16C vector kernels), avxvnni (AVX-VNNI kernels over the
// avx2 table, avxvnni_amd64.go), avx512 (AVX-512 F/BW/VL + VNNI
// kernels over the avx2 table, avx512_amd64.go), then amx (the vector
// kernels below plus AMX tile kernels for prefill) when the CPU, the OS and
// a probe agree (amx_amd64.go). avx512Err and amxErr keep the reasons a
// level is not offered.
func archLevels() []level {
	if !(cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C) {
		avx512Err = errors.New("the CPU lacks AVX2/FMA/F16C")
		avxvnniErr, amxErr = avx512Err, avx512Err
		return nil
	}
	avx2, pf := avx2Table, streamPrefetchAMD
	if intelCPU() {
		avx2, pf = l2Prefetch(avx2), streamPrefetchIntel
	}
	ls := []level{{name: "avx2", tab: avx2, invariant: true}}
	if avxvnniErr = avxvnniMissing(); avxvnniErr == nil {
		ls = append(ls, level{name: "avxvnni", tab: newAVXVNNITable(avx2, vnniAsm), invariant: true})
	}
	if avx512Err = avx512Missing(); avx512Err != nil {
		amxErr = avx512Err
		return ls
	}
	avx512Table := newAVX512Table(avx2, cpu.X86.HasAVX512BF16, pf)
	// Its matrix-matrix kernels for the file layouts of the K-quants and
	// Q8_0 and for F16/BF16, and its one-token BF16 kernel, sum in their
	// own order (TestBatchInvariant checks every other product).
	ls = append(ls, level{name: "avx512", tab: avx512Table, invariant: true, variant: []product{
		{quant.Q4_K, false}, {quant.Q6_K, false}, {quant.Q8_0, false}, {quant.F16, false}, {quant.BF16, false}}})
	if l, err := amxLevel(avx512Table); err != nil {
		amxErr = err
	} else {
		ls = append(ls, l)
	}
	return ls
}

// l2Prefetch returns Intel's tuning of t: the plain Q8_0 kernel prefetching
// 3 KiB ahead instead of 4 (streamPrefetchIntel), and the one-token kernels
// of the interleaved Q4_K and Q6_K layouts prefetching into L2 instead of
// into L1 4 KiB ahead: the choice for Intel cores, where a prefetch into
// L1 holds one of the core's few L1 fill buffers until its line arrives,
// so a single stream per thread keeps too few misses in flight (Emerald
// Rapids, two threads, 8 KiB ahead: 4-10 % more bandwidth, Q4_K_M decode
// 10-15 % faster; docs/PERFORMANCE.md). AMD cores keep the L1 kernels,
// measured on Zen 3 and Zen 5 (Zen 3 treats PREFETCHT1 as PREFETCHT0; Zen
// 4 and 5 fill L2 with it, which no session has measured there). The L2
// kernels also read two 8-row groups at once, g and g+half (twoGroups), as
// the plain Q8_0 kernel reads two rows: two weight streams per thread
// (Sapphire Rapids: Q4_K 10-15 % more bandwidth, Q4_K_M decode 8-11 %
// faster), and with two streams 3 KiB ahead beat 8 KiB (Q4_K_M decode 2-9 %
// faster). All compute the same sums; only the prefetches and the order of
// the groups differ.
func l2Prefetch(t table) table {
	t.q80 = q80Rows(streamPrefetchIntel)
	t.q4kx8 = func(w []byte, rows int, a []quant.BlockQ8K, out []float32) {
		twoGroups(w, rows, quant.BlockQ4_KSize, a, out, q4kx8AVX2L2h2, q4kx8AVX2L2)
	}
	t.q6kx8 = func(w []byte, rows int, a []quant.BlockQ8K, out []float32) {
		twoGroups(w, rows, quant.BlockQ6_KSize, a, out, q6kx8AVX2L2h2, q6kx8AVX2L2)
	}
	return t
}

// How far ahead the two-stream plain kernels (Q8_0; BF16 at the avx512
// level) prefetch each row: on Zen 5 4 KiB read DRAM at 30-31 GB/s per
// core against 24-26 for 1 KiB (the interleaved kernels found the same on
// Zen 3); on Sapphire Rapids whole Q8_0 decodes ran 6-13 % faster with
// 3 KiB than with 4 (and slower with 1), BF16 ones 3-12 %
// (docs/PERFORMANCE.md).
const (
	streamPrefetchAMD   = 4096
	streamPrefetchIntel = 3072
)

// q80Rows is the one-token Q8_0 product: two streams (q80AVX2h2) with
// prefetches pf bytes ahead, the odd last row through q80AVX2.
func q80Rows(pf int) func(w []byte, rows int, a []quant.BlockQ8_0, out []float32) {
	h2 := func(w *byte, a *quant.BlockQ8_0, nb, half int, out *float32) {
		q80AVX2h2(w, a, nb, half, out, pf)
	}
	return func(w []byte, rows int, a []quant.BlockQ8_0, out []float32) {
		twoStreams(w, rows, len(a)*quant.BlockQ8_0Size, a, out, h2, q80AVX2)
	}
}

// twoGroups runs a two-stream interleaved kernel over rows rows (whole
// groups) of len(a) blocks of bs bytes: h2 computes groups g and g+half
// together for the first 2*half groups, and one, its one-stream form, the
// last group when their number is odd.
func twoGroups(w []byte, rows, bs int, a []quant.BlockQ8K, out []float32, h2, one func(w *byte, a *quant.BlockQ8K, nb, groups int, out *float32)) {
	groups := rows / Interleave
	if h := groups / 2; h > 0 {
		h2(&w[0], &a[0], len(a), h, &out[0])
	}
	if g := groups - 1; groups&1 != 0 {
		one(&w[g*Interleave*len(a)*bs], &a[0], len(a), 1, &out[g*Interleave])
	}
}

// intelCPU reports whether CPUID names the vendor GenuineIntel.
func intelCPU() bool {
	_, b, c, d := cpuid(0, 0)
	return b == 0x756e6547 && d == 0x49656e69 && c == 0x6c65746e // "Genu" "ineI" "ntel"
}

// cpuid executes CPUID with EAX = leaf and ECX = sub (cpuid_amd64.s).
func cpuid(leaf, sub uint32) (a, b, c, d uint32)

// amxErr says why the amx level is missing (nil when it is offered).
var amxErr error

// missingLevels lists the amd64 levels this CPU (or OS) cannot run, each
// with the reason: their tests report a skip naming it, and DROIDGO_ISA
// naming one is an error that says it.
func missingLevels() []missingLevel {
	var m []missingLevel
	if avxvnniErr != nil {
		m = append(m, missingLevel{"avxvnni", avxvnniErr})
	}
	if avx512Err != nil {
		m = append(m, missingLevel{"avx512", avx512Err})
	}
	if amxErr != nil {
		m = append(m, missingLevel{"amx", amxErr})
	}
	return m
}

var avx2Table = table{
	q4k: func(w []byte, rows int, a []quant.BlockQ8K, out []float32) {
		q4kAVX2(&w[0], &a[0], len(a), rows, &out[0])
	},
	q4k4: func(w []byte, rows int, a []quant.BlockQ8K, out []float32, ldo int) {
		q4kAVX2x4(&w[0], &a[0], len(a)/4, rows, &out[0], ldo)
	},
	q5k: func(w []byte, rows int, a []quant.BlockQ8K, out []float32) {
		q5kAVX2(&w[0], &a[0], len(a), rows, &out[0])
	},
	q6k: func(w []byte, rows int, a []quant.BlockQ8K, out []float32) {
		q6kAVX2(&w[0], &a[0], len(a), rows, &out[0])
	},
	q6k4: func(w []byte, rows int, a []quant.BlockQ8K, out []float32, ldo int) {
		q6kAVX2x4(&w[0], &a[0], len(a)/4, rows, &out[0], ldo)
	},
	q4kx8: func(w []byte, rows int, a []quant.BlockQ8K, out []float32) {
		q4kx8AVX2(&w[0], &a[0], len(a), rows/Interleave, &out[0])
	},
	q6kx8: func(w []byte, rows int, a []quant.BlockQ8K, out []float32) {
		q6kx8AVX2(&w[0], &a[0], len(a), rows/Interleave, &out[0])
	},
	q4kx84: func(w []byte, rows int, a []quant.BlockQ8K, out []float32, ldo int) {
		q4kx8AVX2x4(&w[0], &a[0], len(a)/4, rows/Interleave, &out[0], ldo)
	},
	q6kx84: func(w []byte, rows int, a []quant.BlockQ8K, out []float32, ldo int) {
		q6kx8AVX2x4(&w[0], &a[0], len(a)/4, rows/Interleave, &out[0], ldo)
	},
	q80: q80Rows(streamPrefetchAMD),
	q804: func(w []byte, rows int, a []quant.BlockQ8_0, out []float32, ldo int) {
		q80AVX2x4(&w[0], &a[0], len(a)/4, rows, &out[0], ldo)
	},
	q40: func(w []byte, rows int, a []quant.BlockQ8_0, out []float32) {
		q40AVX2(&w[0], &a[0], len(a), rows, &out[0])
	},
	f32: func(w []byte, rows int, x []float32, out []float32) {
		f32AVX2(&w[0], &x[0], len(x), rows, &out[0])
	},
	f16: func(w []byte, rows int, x []float32, out []float32) {
		twoStreams(w, rows, 2*len(x), x, out, f16AVX2h2, f16AVX2)
	},
	bf16: func(w []byte, rows int, x []float32, out []float32) {
		twoStreams(w, rows, 2*len(x), x, out, bf16AVX2h2, bf16AVX2)
	},
	f164: func(w []byte, ws int, x []float32, xs, n, rows int, out []float32, ldo int, acc bool) {
		f16AVX2x4(&w[0], ws, &x[0], xs, n, rows, &out[0], ldo, acc)
	},
	bf164: func(w []byte, ws int, x []float32, xs, n, rows int, out []float32, ldo int, acc bool) {
		bf16AVX2x4(&w[0], ws, &x[0], xs, n, rows, &out[0], ldo, acc)
	},
	q8k: q8kBlocks(q8kBlockAVX2),
	dot: func(a, b []float32) float32 {
		var r float32
		f32AVX2((*byte)(unsafe.Pointer(&a[0])), &b[0], len(a), 1, &r)
		return r
	},
	axpy: func(alpha float32, x, y []float32) {
		axpyAVX2(alpha, &x[0], &y[0], len(x))
	},
	dotRows: func(q, k []float32, stride int, out []float32) {
		dotRowsAVX2(&q[0], &k[0], stride, len(out), len(q), &out[0])
	},
	axpyRows: func(p, v []float32, stride int, o []float32) {
		axpyRowsAVX2(&p[0], &v[0], stride, len(p), len(o), &o[0])
	},
	roundF16:  func(x []float32) { roundF16AVX2(&x[0], len(x)) },
	maxF32:    func(x []float32) float32 { return maxAVX2(&x[0], len(x)) },
	scale:     func(x []float32, s float32) { scaleAVX2(&x[0], len(x), s) },
	roundBF16: func(x []float32) { roundBF16AVX2(&x[0], len(x)) },
	encodeF16: func(dst []byte, x []float32) {
		encodeF16AVX2(&dst[0], &x[0], len(x))
	},
	q80Quant: func(x []float32, y []quant.BlockQ8_0) { q80BlocksAVX2(&x[0], &y[0], len(y)) },
	geluErf:  func(y, g, u []float32) { geluErfMulAVX2(&y[0], &g[0], &u[0], len(y)) },
	geluTab:  func(y, g, u, tab []float32) { geluTableAVX2(&y[0], &g[0], &u[0], &tab[0], len(y)) },
}

// twoStreams runs a two-stream kernel over rows rows of rowBytes bytes:
// h2 computes rows r and r+half together (two sequential weight streams per
// thread sharing every activation load; docs/PERFORMANCE.md, "Two streams
// per thread") for the first 2*half rows, and one, its one-stream form,
// computes the last row when rows is odd. len(a) is the blocks (or
// elements) of one row.
func twoStreams[A any](w []byte, rows, rowBytes int, a []A, out []float32, h2, one func(w *byte, a *A, n, rows int, out *float32)) {
	if h := rows / 2; h > 0 {
		h2(&w[0], &a[0], len(a), h, &out[0])
	}
	if r := rows - 1; rows&1 != 0 {
		one(&w[r*rowBytes], &a[0], len(a), 1, &out[r])
	}
}

// The assembly kernels below process rows consecutive weight rows of nb
// blocks (or n elements) each against one activation vector.

//go:noescape
func q4kAVX2(w *byte, a *quant.BlockQ8K, nb, rows int, out *float32)

//go:noescape
func q5kAVX2(w *byte, a *quant.BlockQ8K, nb, rows int, out *float32)

//go:noescape
func q6kAVX2(w *byte, a *quant.BlockQ8K, nb, rows int, out *float32)

//go:noescape
func q80AVX2(w *byte, a *quant.BlockQ8_0, nb, rows int, out *float32)

//go:noescape
func q80AVX2h2(w *byte, a *quant.BlockQ8_0, nb, half int, out *float32, pf int)

//go:noescape
func q40AVX2(w *byte, a *quant.BlockQ8_0, nb, rows int, out *float32)

//go:noescape
func f32AVX2(w *byte, x *float32, n, rows int, out *float32)

//go:noescape
func f16AVX2(w *byte, x *float32, n, rows int, out *float32)

//go:noescape
func bf16AVX2(w *byte, x *float32, n, rows int, out *float32)

//go:noescape
func axpyAVX2(alpha float32, x, y *float32, n int)

//go:noescape
func roundF16AVX2(x *float32, n int)

//go:noescape
func roundBF16AVX2(x *float32, n int)

//go:noescape
func encodeF16AVX2(dst *byte, x *float32, n int)

//go:noescape
func geluErfMulAVX2(y, gate, u *float32, n int)

//go:noescape
func geluTableAVX2(y, gate, u, tab *float32, n int)

//go:noescape
func maxAVX2(x *float32, n int) float32

//go:noescape
func scaleAVX2(x *float32, n int, s float32)

//go:noescape
func q80BlocksAVX2(x *float32, y *quant.BlockQ8_0, n int)

//go:noescape
func dotRowsAVX2(q, k *float32, stride, n, d int, out *float32)

//go:noescape
func axpyRowsAVX2(p, v *float32, stride, n, d int, o *float32)

//go:noescape
func q4kAVX2x4(w *byte, a *quant.BlockQ8K, nb, rows int, out *float32, ldo int)

//go:noescape
func q6kAVX2x4(w *byte, a *quant.BlockQ8K, nb, rows int, out *float32, ldo int)

//go:noescape
func q80AVX2x4(w *byte, a *quant.BlockQ8_0, nb, rows int, out *float32, ldo int)

//go:noescape
func q8kBlockAVX2(x *float32, y *quant.BlockQ8K) bool

//go:noescape
func q4kx8AVX2(w *byte, a *quant.BlockQ8K, nb, groups int, out *float32)

//go:noescape
func q6kx8AVX2(w *byte, a *quant.BlockQ8K, nb, groups int, out *float32)

// q4kx8AVX2L2 and q6kx8AVX2L2 are q4kx8AVX2 and q6kx8AVX2 with their
// software prefetches into L2, 3 KiB ahead (l2Prefetch).
//
//go:noescape
func q4kx8AVX2L2(w *byte, a *quant.BlockQ8K, nb, groups int, out *float32)

// q4kx8AVX2L2h2 is q4kx8AVX2L2 over groups g and g+half together (two
// weight streams per thread; twoGroups).
//
//go:noescape
func q4kx8AVX2L2h2(w *byte, a *quant.BlockQ8K, nb, half int, out *float32)

// q6kx8AVX2L2h2 is q6kx8AVX2L2 over groups g and g+half together.
//
//go:noescape
func q6kx8AVX2L2h2(w *byte, a *quant.BlockQ8K, nb, half int, out *float32)

//go:noescape
func q6kx8AVX2L2(w *byte, a *quant.BlockQ8K, nb, groups int, out *float32)

//go:noescape
func q4kx8AVX2x4(w *byte, a *quant.BlockQ8K, nb, groups int, out *float32, ldo int)

//go:noescape
func q6kx8AVX2x4(w *byte, a *quant.BlockQ8K, nb, groups int, out *float32, ldo int)

// plainPackedInGo: the amd64 matrix-matrix kernels pack both layouts in
// assembly (PlainBatchSlower).
const plainPackedInGo = false
