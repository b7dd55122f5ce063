package spark

import (
	"math"
	"sync"

	"github.com/droidgo/droidgo/model/kernels"
	"github.com/droidgo/droidgo/model/quant"
)

// GELUMode selects the GELU used in the GEGLU feed-forward.
type GELUMode int

const (
	// GELUErf is the exact GELU of the reference (HF) model.
	GELUErf GELUMode = iota
	// GELUTanh is the tanh approximation, computed in float32 like ggml_gelu_f32.
	GELUTanh
	// GELUTable reproduces llama.cpp's CPU GEGLU: the tanh GELU looked up
	// in an fp16 table after rounding the input to fp16 (|x| >= 10 clamped).
	GELUTable
)

// String returns the flag spelling of the mode.
func (g GELUMode) String() string {
	switch g {
	case GELUTanh:
		return "tanh"
	case GELUTable:
		return "table"
	}
	return "erf"
}

// ParseGELU parses "erf", "tanh" or "table".
func ParseGELU(s string) (GELUMode, bool) {
	switch s {
	case "erf":
		return GELUErf, true
	case "tanh":
		return GELUTanh, true
	case "table":
		return GELUTable, true
	}
	return 0, false
}

// gelu32 is ggml_gelu_f32 as compiled into llama.cpp's x86 CPU backends:
// float32 arithmetic with 1 + c*x*x contracted into one FMA.
func gelu32(x float32) float32 {
	const c = float32(0.044715)
	const s = float32(0.79788456080286535587989211986876)
	inner := float32(math.FMA(float64(float32(c*x)), float64(x), 1))
	arg := float32(float32(s*x) * inner)
	th := float32(math.Tanh(float64(arg)))
	return float32(float32(0.5*x) * float32(1+th))
}

var (
	geluTableOnce sync.Once
	geluTab       []float32
)

// GELUTableValues returns the 65536-entry fp16 GELU table (indexed by the fp16
// bits of the input), as ggml builds it.
func GELUTableValues() []float32 {
	geluTableOnce.Do(func() {
		geluTab = make([]float32, 1<<16)
		for i := range geluTab {
			x := quant.FP16ToFP32(uint16(i))
			h := quant.FP32ToFP16(gelu32(x))
			if y := quant.FP16ToFP32(h); y != y {
				// NaN bits as x86 produces them: a NaN input keeps its
				// sign with the payload cleared; inf*0 gives the
				// negative default NaN.
				h = 0xfe00
				if x != x {
					h = uint16(i)&0x8000 | 0x7e00
				}
			}
			geluTab[i] = quant.FP16ToFP32(h)
		}
	})
	return geluTab
}

// geglu computes y[i] = gelu(g[i]) * u[i].
func geglu(mode GELUMode, y, g, u []float32) {
	switch mode {
	case GELUTanh:
		for i := range y {
			y[i] = gelu32(g[i]) * u[i]
		}
	case GELUTable:
		kernels.GELUTableMul(y, g, u, GELUTableValues())
	default:
		kernels.GELUErfMul(y, g, u, geluErf)
	}
}

// rmsNorm writes w * x / sqrt(mean(x^2) + eps) to y, accumulating the sum
// of squares in float64 as ggml does.
func rmsNorm(y, x, w []float32, eps float32) {
	var sum float64
	for _, v := range x {
		sum += float64(v * v)
	}
	mean := float32(sum / float64(len(x)))
	scale := 1 / float32(math.Sqrt(float64(mean+eps)))
	for i, v := range x {
		y[i] = float32(v*scale) * w[i]
	}
}

// ropeTable fills cos/sin for the first dims/2 frequencies at position pos:
// angle = pos * theta^(-2i/dims), computed in float64.
func ropeTable(cos, sin []float32, pos int, dims int, theta float64) {
	for i := 0; i < dims/2; i++ {
		a := float64(pos) * math.Pow(theta, -2*float64(i)/float64(dims))
		cos[i] = float32(math.Cos(a))
		sin[i] = float32(math.Sin(a))
	}
}

// ropeNeox rotates the pairs (i, i+dims/2) of the first dims elements of v.
func ropeNeox(v []float32, cos, sin []float32, dims int) {
	half := dims / 2
	for i := 0; i < half; i++ {
		a, b := v[i], v[i+half]
		v[i] = float32(a*cos[i]) - float32(b*sin[i])
		v[i+half] = float32(b*cos[i]) + float32(a*sin[i])
	}
}
