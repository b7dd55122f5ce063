//go:build !purego

package kernels

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/droidgo/droidgo/model/quant"
)

// TestBF16Detect checks the FEAT_BF16 detection against what the emulated
// CPU model has (the qemu test says: -cpu max has it, cortex-a76 and
// cortex-a53 do not), and that the i8mm level installs the BFMMLA kernel
// exactly when it is there.
func TestBF16Detect(t *testing.T) {
	want := os.Getenv("DROIDGO_WANT_BF16")
	if want == "" {
		t.Skip("DROIDGO_WANT_BF16 not set")
	}
	if got := hasBF16(); got != (want == "1") {
		t.Fatalf("hasBF16() = %v, want %s", got, want)
	}
	if ISA() == "i8mm" && (cur.bf16mm != nil) != (want == "1") {
		t.Fatalf("i8mm level: BFMMLA kernel installed = %v, FEAT_BF16 = %s", cur.bf16mm != nil, want)
	}
}

// BenchmarkGemmArm64 compares, at the level in use (set DROIDGO_ISA to pick
// dotprod or i8mm), the matrix-matrix kernels with the 4-token kernels
// MatMul ran before them ("x4": the same call with the matrix-matrix
// entries removed), for Q4_K, Q6_K, Q8_0 and (where FEAT_BF16 is present)
// BF16 at 64 and 256 tokens: the measurement that decides whether a level
// keeps them. Run it on the
// device: GOOS=android GOARCH=arm64 go test -c, adb push, then
// ./kernels.test -test.run '^$' -test.bench GemmArm64.
func BenchmarkGemmArm64(b *testing.B) {
	const rows, k = 2048, 2048
	r := rand.New(rand.NewPCG(41, 42))
	saved := cur
	defer func() { cur = saved }()
	x4 := saved
	x4.q80mm, x4.q4kmm, x4.q6kmm, x4.bf16mm = nil, nil, nil, nil
	w4 := makeWeights(r, layouts[quant.Q4_K], k/256, rows, modeNormal)
	w6 := makeWeights(r, layouts[quant.Q6_K], k/256, rows, modeNormal)
	w8 := makeWeights(r, layouts[quant.Q8_0], k/32, rows, modeNormal)
	wb := make([]byte, 2*k*rows)
	for i := range k * rows {
		binary.LittleEndian.PutUint16(wb[2*i:], quant.FP32ToBF16(float32(r.NormFloat64())))
	}
	for _, toks := range []int{64, 256} {
		var ak []quant.BlockQ8K
		var a8 []quant.BlockQ8_0
		for range toks {
			ak = append(ak, makeQ8K(r, k/256, modeNormal)...)
			a8 = append(a8, makeQ80(r, k/32, modeNormal)...)
		}
		xb := make([]float32, toks*k)
		for i := range xb {
			xb[i] = float32(r.NormFloat64())
		}
		quant.RoundBF16(xb)
		out := make([]float32, toks*rows)
		for _, c := range []struct {
			name string
			w    []byte
			run  func()
		}{
			{"Q4_K", w4, func() { MatMulQ4K(w4, rows, NewQ8KBatch(ak, toks), out, rows) }},
			{"Q6_K", w6, func() { MatMulQ6K(w6, rows, NewQ8KBatch(ak, toks), out, rows) }},
			{"Q8_0", w8, func() { MatMulQ8_0(w8, rows, NewQ80Batch(a8, toks), out, rows) }},
			{"BF16", wb, func() { matMulBF16(wb, rows, xb, toks, out, rows) }},
		} {
			if c.name == "BF16" && saved.bf16mm == nil {
				continue
			}
			for _, v := range []struct {
				name string
				tab  table
			}{{"mm", saved}, {"x4", x4}} {
				b.Run(fmt.Sprintf("%s/%s/%s/tokens=%d", ISA(), c.name, v.name, toks), func(b *testing.B) {
					cur = v.tab
					defer func() { cur = saved }()
					b.SetBytes(int64(len(c.w) * toks))
					for b.Loop() {
						c.run()
					}
					b.ReportMetric(float64(rows*k*toks)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
				})
			}
		}
	}
}

// TestGemmBF16Pack holds the assembly BF16 packers (bf16Acts and bf16Quad,
// through bf16PackA and bf16PackW) to the Go packers byte for byte: n not a
// multiple of 4, 8 or 16 (odd too), partial token and row quads, operands
// at odd addresses, destinations full of garbage, and values whose lower
// 16 bits are not zero (the packing truncates them). NEON only: it runs at
// every level.
func TestGemmBF16Pack(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 16))
	for _, n := range []int{1, 3, 4, 5, 7, 8, 12, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 130, 256, 259, 2048} {
		nc := (n + 3) / 4
		for _, b := range []int{1, 2, 3, 4, 5, 7, 8, 9, 13, 16} {
			for _, off := range []int{0, 1} {
				back := make([]float32, b*n+off)
				for i := range back {
					back[i] = math.Float32frombits(r.Uint32())
				}
				x := back[off:]
				got := make([]byte, (b+3)/4*nc*mmChunk)
				want := make([]byte, len(got))
				for i := range got {
					got[i], want[i] = 0xA5, 0x5A
				}
				bf16Acts(got, x, b, n, nc)
				bf16ActsGo(want, x, b, n, nc, 0, 0)
				if !bytes.Equal(got, want) {
					t.Fatalf("activations n=%d b=%d offset %d: packed bytes differ from the Go packer's", n, b, off)
				}
			}
		}
		for _, rows := range []int{1, 3, 4, 5, 8, 11} {
			for _, off := range []int{0, 1} {
				rb := 2 * n
				back := make([]byte, rows*rb+off)
				for i := range back {
					back[i] = byte(r.Uint32())
				}
				w := back[off:]
				for r0 := 0; r0 < rows; r0 += 4 {
					nr := min(4, rows-r0)
					got := make([]byte, nc*mmChunk)
					want := make([]byte, len(got))
					for i := range got {
						got[i], want[i] = 0xA5, 0x5A
					}
					bf16Quad(got, w, r0, nr, rb, nc)
					bf16QuadGo(want, w, r0, nr, rb, nc, 0)
					if !bytes.Equal(got, want) {
						t.Fatalf("weights n=%d rows=%d r0=%d offset %d: packed bytes differ from the Go packer's", n, rows, r0, off)
					}
				}
			}
		}
	}
}
