package quant

import (
	"math/rand/v2"
	"testing"
)

// Dot products over one 2048-wide row (the 1.7B hidden size).
func BenchmarkDot(b *testing.B) {
	const n = 2048
	r := rand.New(rand.NewPCG(1, 1))
	w := randRow(r, n, 1)
	x := randRow(r, n, 1)
	q8k := make([]BlockQ8K, n/QK_K)
	QuantizeQ8K(x, q8k)
	q80 := make([]BlockQ8_0, n/32)
	QuantizeQ8_0(x, q80)
	for _, typ := range []Type{F32, F16, BF16, Q8_0, Q4_K, Q6_K} {
		buf := make([]byte, typ.RowSize(n))
		QuantizeRow(typ, w, buf)
		b.Run(typ.String(), func(b *testing.B) {
			b.SetBytes(int64(len(buf)))
			for i := 0; i < b.N; i++ {
				switch typ {
				case F32:
					DotF32(buf, x)
				case F16:
					DotF16(buf, x)
				case BF16:
					DotBF16(buf, x)
				case Q8_0:
					DotQ8_0(buf, q80)
				case Q4_K:
					DotQ4K(buf, q8k)
				case Q6_K:
					DotQ6K(buf, q8k)
				}
			}
		})
	}
}
