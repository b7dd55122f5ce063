package kernels_test

import (
	"fmt"
	"math"

	"github.com/droidgo/droidgo/model/kernels"
	"github.com/droidgo/droidgo/model/quant"
)

// A decode step: quantise the activation once, then one call per row range
// (in the engine, one call per worker with its share of the rows).
func ExampleMatVecQ4K() {
	const rows, k = 4, 512
	x := make([]float32, k)
	wf := make([]float32, rows*k)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)))
	}
	for i := range wf {
		wf[i] = float32(math.Cos(float64(i) * 0.37))
	}
	w := make([]byte, quant.Q4_K.RowSize(rows*k)) // rows consecutive GGUF rows
	if err := quant.QuantizeRow(quant.Q4_K, wf, w); err != nil {
		panic(err)
	}
	a := make([]quant.BlockQ8K, k/quant.QK_K)
	kernels.QuantizeQ8K(x, a)

	out := make([]float32, rows)
	kernels.MatVecQ4K(w, rows, a, out)

	rowBytes := quant.Q4_K.RowSize(k)
	for r := range out {
		ref := quant.DotQ4K(w[r*rowBytes:(r+1)*rowBytes], a)
		fmt.Println(math.Abs(float64(out[r]-ref)) <= 1e-4*math.Abs(float64(ref))+1e-4)
	}
	// Output:
	// true
	// true
	// true
	// true
}
