//go:build !purego

package kernels

import (
	"errors"
	"unsafe"

	"github.com/droidgo/droidgo/model/quant"
	"golang.org/x/sys/cpu"
)

// archLevels: "neon" (every arm64 CPU) runs every kernel in plain NEON (the
// int8 dot products as SMULL+SADALP); "dotprod" replaces the Q4_K, Q5_K, Q6_K
// and Q8_0 ones with SDOT kernels (Q5_K has only the SDOT one), Q4_0 included
// (q40_arm64.s); "i8mm" (FEAT_I8MM,
// found by x/sys/cpu from HWCAP2 on Linux and Android, sysctl on darwin) adds
// SMMLA matrix-matrix kernels for batched Q8_0, Q4_K and Q6_K products
// (mmla_arm64.go).
func archLevels() []level {
	ls := []level{{name: "neon", tab: neonTable}}
	if cpu.ARM64.HasASIMDDP {
		t := neonTable
		t.q4k = func(w []byte, rows int, a []quant.BlockQ8K, out []float32) {
			q4kDOT(&w[0], &a[0], len(a), rows, &out[0])
		}
		t.q4k4 = func(w []byte, rows int, a []quant.BlockQ8K, out []float32, ldo int) {
			q4kDOTx4(&w[0], &a[0], len(a)/4, rows, &out[0], ldo)
		}
		t.q6k4 = func(w []byte, rows int, a []quant.BlockQ8K, out []float32, ldo int) {
			q6kDOTx4(&w[0], &a[0], len(a)/4, rows, &out[0], ldo)
		}
		t.q804 = func(w []byte, rows int, a []quant.BlockQ8_0, out []float32, ldo int) {
			q80DOTx4(&w[0], &a[0], len(a)/4, rows, &out[0], ldo)
		}
		t.q6k = func(w []byte, rows int, a []quant.BlockQ8K, out []float32) {
			q6kDOT(&w[0], &a[0], len(a), rows, &out[0])
		}
		t.q5k = func(w []byte, rows int, a []quant.BlockQ8K, out []float32) {
			q5kDOT(&w[0], &a[0], len(a), rows, &out[0])
		}
		t.q80 = func(w []byte, rows int, a []quant.BlockQ8_0, out []float32) {
			q80DOT(&w[0], &a[0], len(a), rows, &out[0])
		}
		t.q40 = func(w []byte, rows int, a []quant.BlockQ8_0, out []float32) {
			q40DOT(&w[0], &a[0], len(a), rows, &out[0])
		}
		t = x8DOT(t)
		ls = append(ls, level{name: "dotprod", tab: dotprodMMTable(t)})
		if cpu.ARM64.HasI8MM {
			ls = append(ls, level{name: "i8mm", tab: i8mmTable(t)})
		}
	}
	return ls
}

// missingLevels lists the arm64 levels this CPU cannot run, with the
// reason (every arm64 CPU has neon).
func missingLevels() []missingLevel {
	var m []missingLevel
	if !cpu.ARM64.HasASIMDDP {
		m = append(m, missingLevel{"dotprod", errors.New("the CPU lacks the dot-product extension, SDOT")})
	}
	if !cpu.ARM64.HasASIMDDP || !cpu.ARM64.HasI8MM {
		m = append(m, missingLevel{"i8mm", errors.New("the CPU lacks SDOT or FEAT_I8MM, SMMLA")})
	}
	return m
}

var neonTable = table{
	q4k: func(w []byte, rows int, a []quant.BlockQ8K, out []float32) {
		q4kNEON(&w[0], &a[0], len(a), rows, &out[0])
	},
	q4k4: func(w []byte, rows int, a []quant.BlockQ8K, out []float32, ldo int) {
		q4kNEONx4(&w[0], &a[0], len(a)/4, rows, &out[0], ldo)
	},
	q6k: func(w []byte, rows int, a []quant.BlockQ8K, out []float32) {
		q6kNEON(&w[0], &a[0], len(a), rows, &out[0])
	},
	q5k: genericTable.q5k, // no plain-NEON Q5_K kernel (dotprod has one)
	q6k4: func(w []byte, rows int, a []quant.BlockQ8K, out []float32, ldo int) {
		q6kNEONx4(&w[0], &a[0], len(a)/4, rows, &out[0], ldo)
	},
	q80: func(w []byte, rows int, a []quant.BlockQ8_0, out []float32) {
		q80NEON(&w[0], &a[0], len(a), rows, &out[0])
	},
	q804: func(w []byte, rows int, a []quant.BlockQ8_0, out []float32, ldo int) {
		q80NEONx4(&w[0], &a[0], len(a)/4, rows, &out[0], ldo)
	},
	q40: func(w []byte, rows int, a []quant.BlockQ8_0, out []float32) {
		q40NEON(&w[0], &a[0], len(a), rows, &out[0])
	},
	f32: func(w []byte, rows int, x []float32, out []float32) {
		f32NEON(&w[0], &x[0], len(x), rows, &out[0])
	},
	f16: func(w []byte, rows int, x []float32, out []float32) {
		f16NEON(&w[0], &x[0], len(x), rows, &out[0])
	},
	bf16: func(w []byte, rows int, x []float32, out []float32) {
		bf16NEON(&w[0], &x[0], len(x), rows, &out[0])
	},
	f164:  neonFloatX4(f16NEONx4, f16NEON),
	bf164: neonFloatX4(bf16NEONx4, bf16NEON),
	dot: func(a, b []float32) float32 {
		var r float32
		f32NEON((*byte)(unsafe.Pointer(&a[0])), &b[0], len(a), 1, &r)
		return r
	},
	axpy: func(alpha float32, x, y []float32) {
		axpyNEON(alpha, &x[0], &y[0], len(x))
	},
	q80Quant:  func(x []float32, y []quant.BlockQ8_0) { q80BlocksNEON(&x[0], &y[0], len(y)) },
	q8k:       q8kBlocks(q8kBlockNEON),
	roundF16:  func(x []float32) { roundF16NEON(&x[0], len(x)) },
	encodeF16: func(dst []byte, x []float32) { encodeF16NEON(&dst[0], &x[0], len(x)) },
	geluTab: func(y, g, u, tab []float32) {
		geluTableNEON(&y[0], &g[0], &u[0], &tab[0], len(y))
	},
}

// The assembly kernels process rows consecutive weight rows of nb blocks (or n
// elements) each against one activation vector.

//go:noescape
func q4kDOT(w *byte, a *quant.BlockQ8K, nb, rows int, out *float32)

//go:noescape
func q5kDOT(w *byte, a *quant.BlockQ8K, nb, rows int, out *float32)

//go:noescape
func q6kDOT(w *byte, a *quant.BlockQ8K, nb, rows int, out *float32)

//go:noescape
func q80DOT(w *byte, a *quant.BlockQ8_0, nb, rows int, out *float32)

//go:noescape
func f32NEON(w *byte, x *float32, n, rows int, out *float32)

//go:noescape
func f16NEON(w *byte, x *float32, n, rows int, out *float32)

//go:noescape
func bf16NEON(w *byte, x *float32, n, rows int, out *float32)

//go:noescape
func axpyNEON(alpha float32, x, y *float32, n int)

//go:noescape
func q4kDOTx4(w *byte, a *quant.BlockQ8K, nb, rows int, out *float32, ldo int)

//go:noescape
func q6kDOTx4(w *byte, a *quant.BlockQ8K, nb, rows int, out *float32, ldo int)

//go:noescape
func q4kNEON(w *byte, a *quant.BlockQ8K, nb, rows int, out *float32)

//go:noescape
func q6kNEON(w *byte, a *quant.BlockQ8K, nb, rows int, out *float32)

//go:noescape
func q80NEON(w *byte, a *quant.BlockQ8_0, nb, rows int, out *float32)

//go:noescape
func q4kNEONx4(w *byte, a *quant.BlockQ8K, nb, rows int, out *float32, ldo int)

//go:noescape
func q6kNEONx4(w *byte, a *quant.BlockQ8K, nb, rows int, out *float32, ldo int)

//go:noescape
func q80DOTx4(w *byte, a *quant.BlockQ8_0, nb, rows int, out *float32, ldo int)

//go:noescape
func q40DOT(w *byte, a *quant.BlockQ8_0, nb, rows int, out *float32)

//go:noescape
func q40NEON(w *byte, a *quant.BlockQ8_0, nb, rows int, out *float32)

//go:noescape
func q80NEONx4(w *byte, a *quant.BlockQ8_0, nb, rows int, out *float32, ldo int)

//go:noescape
func q80BlocksNEON(x *float32, y *quant.BlockQ8_0, nb int)

//go:noescape
func q8kBlockNEON(x *float32, y *quant.BlockQ8K) bool

//go:noescape
func roundF16NEON(x *float32, n int)

//go:noescape
func encodeF16NEON(dst *byte, x *float32, n int)

//go:noescape
func geluTableNEON(y, gate, u, tab *float32, n int)
