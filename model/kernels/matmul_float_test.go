package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/droidgo/droidgo/model/quant"
)

// floatCodec encodes and decodes one float weight type.
type floatCodec struct {
	typ   quant.Type
	es    int // bytes per element
	enc   func(float32) []byte
	dec   func([]byte) float32
	ref   func([]byte, []float32) float32
	round func([]float32)
	mm    func([]byte, int, []float32, int, []float32, int)
	mv    func([]byte, int, []float32, []float32)
}

var floatCodecs = []floatCodec{
	{quant.F32, 4,
		func(v float32) []byte { return binary.LittleEndian.AppendUint32(nil, math.Float32bits(v)) },
		func(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) },
		quant.DotF32, func([]float32) {}, MatMulF32, MatVecF32},
	{quant.F16, 2,
		func(v float32) []byte { return binary.LittleEndian.AppendUint16(nil, quant.FP32ToFP16(v)) },
		func(b []byte) float32 { return quant.FP16ToFP32(binary.LittleEndian.Uint16(b)) },
		quant.DotF16, quant.RoundF16, MatMulF16, MatVecF16},
	{quant.BF16, 2,
		func(v float32) []byte { return binary.LittleEndian.AppendUint16(nil, quant.FP32ToBF16(v)) },
		func(b []byte) float32 { return quant.BF16ToFP32(binary.LittleEndian.Uint16(b)) },
		quant.DotBF16, quant.RoundBF16, matMulBF16, MatVecBF16},
}

func codecOf(typ quant.Type) floatCodec {
	for _, c := range floatCodecs {
		if c.typ == typ {
			return c
		}
	}
	panic(typ)
}

// magFloat is the sum of |w[k]*x[k]| over one float weight row, the scale of
// the rounding error any summation order may make.
func magFloat(typ quant.Type, row []byte, x []float32) float64 {
	c := codecOf(typ)
	var m float64
	for k, v := range x {
		m += math.Abs(float64(c.dec(row[k*c.es:])) * float64(v))
	}
	return m
}

// TestMatMulFloat runs the batched float products (4 tokens per weight load
// where a 4-token kernel exists, then single tokens) for every batch size
// 1..9 against the references: n with and without a tail of n%8 elements
// (and n below one vector), one and several K blocks, odd and even row counts
// (the 4-token kernels pair rows), one and several row panels, unaligned
// weights and activations, and output padding (ldo > rows) that must stay
// untouched. Small integers make every partial sum exact, so those must match
// bit for bit. -short (used for the qemu runs) trims the batch sizes.
func TestMatMulFloat(t *testing.T) {
	const pad = 0x7fc0beef // a NaN no kernel produces
	forEachLevel(t, func(t *testing.T) {
		if testing.Short() && ISA() == "generic" {
			t.Skip("-short: the generic level is the quant references row by row, covered by the native run")
		}
		r := rand.New(rand.NewPCG(17, 18))
		type shape struct{ n, rows, b int }
		var shapes []shape
		for _, n := range []int{1, 7, 8, 15, 17, 256, 263, 2048, 2053, 2056} {
			for _, rows := range []int{1, 2, 3, 8} {
				for b := 1; b <= 9; b++ {
					if (n > 1000 || testing.Short()) && b != 1 && b != 4 && b != 7 && b != 9 {
						continue // single, 4-token and mixed batches
					}
					if testing.Short() && n > 1000 && n != 2053 {
						continue // -short (the qemu runs): one long row, with a tail
					}
					shapes = append(shapes, shape{n, rows, b})
				}
			}
		}
		// More rows than one panel (an odd count, so the last panel ends on
		// a single row), and several K blocks with a tail in the last; one
		// token of rows that long runs the 4-token kernel on four copies of
		// itself writing one place (matVecFloatLong), in row quads too.
		shapes = append(shapes, shape{1100, 131, 4}, shape{floatChunk + 1, 2, 4}, shape{floatChunk + 1, 5, 1})
		if !testing.Short() {
			shapes = append(shapes, shape{2053, 67, 9}, shape{floatChunk*2 + 13, 3, 5}, shape{floatChunk*2 + 13, 6, 5})
		}
		for _, c := range floatCodecs {
			for _, sh := range shapes {
				n, rows, b := sh.n, sh.rows, sh.b
				for _, special := range []string{"random", "subnormal", "small-int"} {
					if special != "random" && (b%3 != 1 || n > 300) {
						continue // keep the run short: random covers every shape
					}
					exact := special == "small-int"
					val := func() float32 {
						switch special {
						case "subnormal":
							return float32(r.IntN(1023)) * (1.0 / (1 << 24))
						case "small-int":
							return float32(r.IntN(17) - 8)
						}
						return float32(r.NormFloat64())
					}
					w := make([]byte, 1+rows*n*c.es)[1:] // unaligned start
					for i := 0; i < rows*n; i++ {
						copy(w[i*c.es:], c.enc(val()))
					}
					x := make([]float32, 1+b*n)[1:]
					for i := range x {
						x[i] = float32(r.NormFloat64())
						if exact {
							x[i] = float32(r.IntN(17) - 8)
						}
					}
					c.round(x)
					ldo := rows + 3
					out := make([]float32, b*ldo+1)
					for i := range out {
						out[i] = math.Float32frombits(pad)
					}
					c.mm(w, rows, x, b, out, ldo)
					rb := n * c.es
					for tok := 0; tok < b; tok++ {
						xt := x[tok*n : (tok+1)*n]
						for i := 0; i < ldo; i++ {
							got := out[tok*ldo+i]
							if i >= rows {
								if math.Float32bits(got) != pad {
									t.Errorf("%v n=%d rows=%d b=%d token %d: wrote padding [%d]", c.typ, n, rows, b, tok, i)
								}
								continue
							}
							row := w[i*rb : (i+1)*rb]
							what := fmt.Sprintf("%v %s n=%d rows=%d b=%d token %d row %d", c.typ, special, n, rows, b, tok, i)
							check(t, what, got, c.ref(row, xt), magFloat(c.typ, row, xt), exact)
						}
					}
					if math.Float32bits(out[b*ldo]) != pad {
						t.Errorf("%v n=%d rows=%d b=%d: wrote past the last output", c.typ, n, rows, b)
					}
					if b == 1 {
						// The one-token product over all rows at once: a
						// batch of one may reach it a row at a time.
						mv := make([]float32, rows)
						c.mv(w, rows, x, mv)
						for i, got := range mv {
							row := w[i*rb : (i+1)*rb]
							what := fmt.Sprintf("%v %s n=%d rows=%d one token row %d", c.typ, special, n, rows, i)
							check(t, what, got, c.ref(row, x), magFloat(c.typ, row, x), exact)
						}
					}
				}
			}
		}
	})
}
