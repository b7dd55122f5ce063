//go:build !purego

package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/droidgo/droidgo/model/quant"
)

// twinLevels are tables no level of this CPU runs, tested beside the
// levels by forEachLevel on every AVX2 host: the avx2 table with the
// one-token interleaved kernels of the other CPU vendor (l2Prefetch), and,
// on a CPU without AVX-VNNI, the avxvnni level's table with the AVX2 twins
// of its kernels (gen_avxvnni.py); where the CPU has AVX-VNNI the real
// level is tested.
func twinLevels() []level {
	if !hasLevel("avx2") {
		return nil
	}
	ls := []level{{name: "avx2-prefetch-l2", tab: l2Prefetch(avx2Table), invariant: true}}
	if intelCPU() {
		ls[0] = level{name: "avx2-prefetch-l1", tab: avx2Table, invariant: true}
	}
	if avxvnniErr == nil {
		return ls
	}
	return append(ls, vnniTwinLevel())
}

// vnniTwinLevel is the avxvnni level's table with the AVX2 twins of its
// kernels.
func vnniTwinLevel() level {
	return level{name: "avxvnni-as-avx2", tab: newAVXVNNITable(avx2Table, vnniKernels{q4kx8: q4kx8VNNIAsAVX2, q6kx8: q6kx8VNNIAsAVX2, q80x8: q80x8VNNIAsAVX2, q80x81: q80x8VNNI1AsAVX2}), invariant: true}
}

// TestAVXVNNIEncodings disassembles every byte-encoded instruction of the
// avxvnni kernels with objdump and compares it with its comment.
func TestAVXVNNIEncodings(t *testing.T) {
	n := checkByteEncodings(t, "avxvnni_amd64.s")
	t.Logf("%d byte-encoded AVX-VNNI instructions match their mnemonics", n)
}

// TestAVXVNNIBatchInvariant: at the avxvnni level (its AVX2 twin on a CPU
// without AVX-VNNI) the products of interleaved Q4_K, Q6_K and Q8_0 matrices give
// every token bit for bit the same result whether it comes alone
// (MatVec*x8: the avx2 level's Q4_K and Q6_K kernels, q80x8VNNI1), in 4 or
// in batches of any size over several token tiles (MatMul*x8: the VNNI
// kernels).
func TestAVXVNNIBatchInvariant(t *testing.T) {
	l := level{name: "avxvnni", tab: newAVXVNNITable(avx2Table, vnniAsm)}
	if avxvnniErr != nil {
		if !hasLevel("avx2") {
			t.Skip("no avx2 level")
		}
		l = vnniTwinLevel()
	}
	orig := ISA()
	defer SetISA(orig)
	use(l)
	r := rand.New(rand.NewPCG(9, 10))
	const rows, nb = 24, 3
	for _, typ := range []quant.Type{quant.Q4_K, quant.Q6_K} {
		plain := makeWeights(r, layouts[typ], nb, rows, modeNormal)
		w := make([]byte, len(plain))
		if err := Repack(typ, w, plain, rows, nb*quant.QK_K); err != nil {
			t.Fatal(err)
		}
		mv, mm := MatVecQ4Kx8, MatMulQ4Kx8
		if typ == quant.Q6_K {
			mv, mm = MatVecQ6Kx8, MatMulQ6Kx8
		}
		for _, b := range []int{1, 2, 4, 5, 15, 16, 17, 64, 70} {
			var a []quant.BlockQ8K
			for range b {
				a = append(a, makeQ8K(r, nb, modeNormal)...)
			}
			got := make([]float32, b*rows)
			mm(w, rows, NewQ8KBatch(a, b), got, rows)
			one := make([]float32, rows)
			for tok := 0; tok < b; tok++ {
				mv(w, rows, a[tok*nb:(tok+1)*nb], one)
				same(t, fmt.Sprintf("%s %v b=%d token %d", l.name, typ, b, tok), got[tok*rows:(tok+1)*rows], one)
			}
		}
	}
	plain := makeWeights(r, layouts[quant.Q8_0], 8*nb, rows, modeNormal)
	w := make([]byte, len(plain))
	if err := Repack(quant.Q8_0, w, plain, rows, 8*nb*32); err != nil {
		t.Fatal(err)
	}
	for _, b := range []int{1, 3, 4, 16, 17, 65} {
		var a []quant.BlockQ8_0
		for range b {
			a = append(a, makeQ80(r, 8*nb, modeNormal)...)
		}
		got := make([]float32, b*rows)
		MatMulQ8_0x8(w, rows, NewQ80Batch(a, b), got, rows)
		one := make([]float32, rows)
		for tok := 0; tok < b; tok++ {
			MatVecQ8_0x8(w, rows, a[tok*8*nb:(tok+1)*8*nb], one)
			same(t, fmt.Sprintf("%s Q8_0 b=%d token %d", l.name, b, tok), got[tok*rows:(tok+1)*rows], one)
		}
	}
}

// same fails unless got and want are the same floats bit for bit.
func same(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i, v := range want {
		if math.Float32bits(got[i]) != math.Float32bits(v) {
			t.Fatalf("%s row %d: batch %v, alone %v", what, i, got[i], v)
		}
	}
}
