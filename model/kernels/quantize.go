package kernels

import (
	"fmt"

	"github.com/droidgo/droidgo/model/quant"
)

// QuantizeQ8K is quant.QuantizeQ8K (bit for bit): it quantises x, len(y)*256
// floats, into Q8_K activation blocks, with SIMD where the level has it.
func QuantizeQ8K(x []float32, y []quant.BlockQ8K) {
	if len(x) < len(y)*quant.QK_K {
		panic(fmt.Sprintf("kernels: QuantizeQ8K: %d floats for %d blocks", len(x), len(y)))
	}
	if cur.q8k == nil {
		quant.QuantizeQ8K(x, y)
		return
	}
	cur.q8k(x, y)
}

// q8kBlocks makes a QuantizeQ8K of an assembly kernel for one block, which
// returns false for the blocks it leaves to the reference (each says
// which).
func q8kBlocks(block func(x *float32, y *quant.BlockQ8K) bool) func(x []float32, y []quant.BlockQ8K) {
	return func(x []float32, y []quant.BlockQ8K) {
		for i := range y {
			if !block(&x[i*quant.QK_K], &y[i]) {
				quant.QuantizeQ8K(x[i*quant.QK_K:(i+1)*quant.QK_K], y[i:i+1])
			}
		}
	}
}
