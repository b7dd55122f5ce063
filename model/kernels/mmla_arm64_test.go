//go:build !purego

package kernels

import (
	"encoding/binary"
	"fmt"
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
			{"Q4_K", w4, func() { MatMulQ4K(w4, rows, ak, toks, out, rows) }},
			{"Q6_K", w6, func() { MatMulQ6K(w6, rows, ak, toks, out, rows) }},
			{"Q8_0", w8, func() { MatMulQ8_0(w8, rows, a8, toks, out, rows) }},
			{"BF16", wb, func() { MatMulBF16(wb, rows, xb, toks, out, rows) }},
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
