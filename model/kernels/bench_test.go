package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/droidgo/droidgo/model/quant"
)

// BenchmarkMatVec reports GB/s of weights streamed by one matrix-vector
// product, single-threaded, for the two FFN shapes of the 1.7B model
// (rows x K, several MB: streamed from L3/DRAM), and a 128x2048 matrix that
// stays in L2 (the kernel's instruction throughput), per weight type and
// instruction-set level.
func BenchmarkMatVec(b *testing.B) {
	shapes := [][2]int{{2048, 6656}, {6656, 2048}, {128, 2048}}
	types := []quant.Type{quant.Q4_K, quant.Q6_K, quant.Q8_0, quant.BF16, quant.F16, quant.F32}
	orig := ISA()
	defer SetISA(orig)
	r := rand.New(rand.NewPCG(9, 9))
	for _, typ := range types {
		for _, sh := range shapes {
			rows, k := sh[0], sh[1]
			var w []byte
			switch typ {
			case quant.F32, quant.F16, quant.BF16:
				w = make([]byte, rows*typ.RowSize(k))
				// Values like a model's: random bytes would make some of
				// them subnormal, and Intel cores take microcode assists
				// on those (measured ~30x slower).
				for i := 0; i < rows*k; i++ {
					v := float32(r.NormFloat64() * 0.05)
					switch typ {
					case quant.F32:
						binary.LittleEndian.PutUint32(w[4*i:], math.Float32bits(v))
					case quant.F16:
						binary.LittleEndian.PutUint16(w[2*i:], quant.FP32ToFP16(v))
					default:
						binary.LittleEndian.PutUint16(w[2*i:], quant.FP32ToBF16(v))
					}
				}
			default:
				lay := layouts[typ]
				w = makeWeights(r, lay, k/lay.n, rows, modeNormal)
			}
			x := make([]float32, k)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			q8k := make([]quant.BlockQ8K, k/256)
			quant.QuantizeQ8K(x, q8k)
			q80 := make([]quant.BlockQ8_0, k/32)
			quant.QuantizeQ8_0(x, q80)
			out := make([]float32, rows)
			for _, isa := range Levels() {
				b.Run(fmt.Sprintf("%v/%dx%d/%s", typ, rows, k, isa), func(b *testing.B) {
					if err := SetISA(isa); err != nil {
						b.Fatal(err)
					}
					b.SetBytes(int64(len(w)))
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					cpu0 := threadCPU()
					defer func() {
						if cpu := (threadCPU() - cpu0).Seconds(); cpu > 0 {
							b.ReportMetric(float64(b.N)*float64(len(w))/cpu/1e9, "GB/cpu-s")
						}
					}()
					for b.Loop() {
						switch typ {
						case quant.Q4_K:
							MatVecQ4K(w, rows, q8k, out)
						case quant.Q6_K:
							MatVecQ6K(w, rows, q8k, out)
						case quant.Q8_0:
							MatVecQ8_0(w, rows, q80, out)
						case quant.BF16:
							MatVecBF16(w, rows, x, out)
						case quant.F16:
							MatVecF16(w, rows, x, out)
						case quant.F32:
							MatVecF32(w, rows, x, out)
						}
					}
				})
			}
		}
	}
}

// BenchmarkMatMulK compares a 16-token batch (prefill) through MatMulQ4K /
// MatMulQ6K / MatMulQ8_0 with 16 separate MatVec calls on a 2048x2048 matrix, at the best
// level. Bytes are weight bytes x tokens, so GB/s is comparable with
// BenchmarkMatVec's instruction-bound (L2) rates.
func BenchmarkMatMulK(b *testing.B) {
	const rows, k, toks = 2048, 2048, 16
	r := rand.New(rand.NewPCG(10, 10))
	x := make([]float32, k*toks)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	a := make([]quant.BlockQ8K, toks*k/256)
	quant.QuantizeQ8K(x, a)
	out := make([]float32, rows*toks)
	for _, c := range []struct {
		typ quant.Type
		mm  func([]byte, int, *Q8KBatch, []float32, int)
		mv  func([]byte, int, []quant.BlockQ8K, []float32)
	}{{quant.Q4_K, MatMulQ4K, MatVecQ4K}, {quant.Q6_K, MatMulQ6K, MatVecQ6K}} {
		w := makeWeights(r, layouts[c.typ], k/256, rows, modeNormal)
		b.Run(c.typ.String()+"/MatMul", func(b *testing.B) {
			b.SetBytes(int64(len(w) * toks))
			for b.Loop() {
				c.mm(w, rows, NewQ8KBatch(a, toks), out, rows)
			}
		})
		b.Run(c.typ.String()+"/MatVec-per-token", func(b *testing.B) {
			b.SetBytes(int64(len(w) * toks))
			for b.Loop() {
				for t := 0; t < toks; t++ {
					c.mv(w, rows, a[t*k/256:(t+1)*k/256], out[t*rows:(t+1)*rows])
				}
			}
		})
	}
	a8 := make([]quant.BlockQ8_0, toks*k/32)
	quant.QuantizeQ8_0(x, a8)
	w8 := makeWeights(r, layouts[quant.Q8_0], k/32, rows, modeNormal)
	b.Run("Q8_0/MatMul", func(b *testing.B) {
		b.SetBytes(int64(len(w8) * toks))
		for b.Loop() {
			MatMulQ8_0(w8, rows, NewQ80Batch(a8, toks), out, rows)
		}
	})
	b.Run("Q8_0/MatVec-per-token", func(b *testing.B) {
		b.SetBytes(int64(len(w8) * toks))
		for b.Loop() {
			for t := 0; t < toks; t++ {
				MatVecQ8_0(w8, rows, a8[t*k/32:(t+1)*k/32], out[t*rows:(t+1)*rows])
			}
		}
	})
}

// BenchmarkQuantizeQ8K quantises one 6656-float activation (the FFN down
// projection's input) per level; bytes are input bytes.
func BenchmarkQuantizeQ8K(b *testing.B) {
	r := rand.New(rand.NewPCG(11, 11))
	x := make([]float32, 6656)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	y := make([]quant.BlockQ8K, len(x)/256)
	orig := ISA()
	defer SetISA(orig)
	for _, isa := range Levels() {
		b.Run(isa, func(b *testing.B) {
			if err := SetISA(isa); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(4 * len(x)))
			for b.Loop() {
				QuantizeQ8K(x, y)
			}
		})
	}
}

// BenchmarkMatMulFloat compares a 64-token batch (spark's prefill batch) of
// BF16 and F16 weights through matMulBF16 / MatMulF16 (4 tokens per weight
// load on the assembly levels) with the row-tiled one-token kernel per token
// (the path before the 4-token kernels), at the best level, for a square
// 2048x2048 projection and the 2048x6656 FFN down projection. Bytes are
// weight bytes x tokens.
func BenchmarkMatMulFloat(b *testing.B) {
	const toks = 64
	r := rand.New(rand.NewPCG(12, 12))
	for _, sh := range [][2]int{{2048, 2048}, {2048, 6656}} {
		rows, k := sh[0], sh[1]
		x := make([]float32, k*toks)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		out := make([]float32, rows*toks)
		w := make([]byte, rows*k*2)
		for i := range w {
			w[i] = byte(r.Uint32() & 0x3f)
		}
		for _, c := range []struct {
			name string
			mm   func([]byte, int, []float32, int, []float32, int)
			mv   func([]byte, int, []float32, []float32)
		}{{"BF16", matMulBF16, MatVecBF16}, {"F16", MatMulF16, MatVecF16}} {
			b.Run(fmt.Sprintf("%s/%dx%d/MatMul", c.name, rows, k), func(b *testing.B) {
				b.SetBytes(int64(len(w) * toks))
				for b.Loop() {
					c.mm(w, rows, x, toks, out, rows)
				}
			})
			b.Run(fmt.Sprintf("%s/%dx%d/MatVec-tiled", c.name, rows, k), func(b *testing.B) {
				b.SetBytes(int64(len(w) * toks))
				for b.Loop() {
					matMul("bench", w, rows, x, toks, out, rows, 2, c.mv, nil)
				}
			})
		}
	}
}
