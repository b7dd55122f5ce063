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
