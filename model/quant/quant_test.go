package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestFP16RoundTrip(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		f := FP16ToFP32(uint16(h))
		if f != f { // NaN
			continue
		}
		if got := FP32ToFP16(f); got != uint16(h) {
			t.Fatalf("fp16 %#04x -> %g -> %#04x", h, f, got)
		}
	}
	cases := []struct {
		f    float32
		want uint16
	}{
		{1, 0x3c00}, {-2, 0xc000}, {65504, 0x7bff}, {65520, 0x7c00}, {1e-8, 0},
		{5.960464477539063e-08, 0x0001}, {2.98023223876953125e-08, 0}, // tie to even
		{1 + 1.0/2048, 0x3c00}, {1 + 3.0/2048, 0x3c02},
	}
	for _, c := range cases {
		if got := FP32ToFP16(c.f); got != c.want {
			t.Errorf("FP32ToFP16(%g) = %#04x, want %#04x", c.f, got, c.want)
		}
	}
}

func TestBF16(t *testing.T) {
	cases := []struct {
		f    float32
		want uint16
	}{{1, 0x3f80}, {math.Float32frombits(0x3f808000), 0x3f80}, {math.Float32frombits(0x3f818000), 0x3f82}, {math.Float32frombits(0x3f808001), 0x3f81}}
	for _, c := range cases {
		if got := FP32ToBF16(c.f); got != c.want {
			t.Errorf("FP32ToBF16(%x) = %#04x, want %#04x", math.Float32bits(c.f), got, c.want)
		}
	}
}

func TestNearestInt(t *testing.T) {
	for _, c := range []struct {
		f    float32
		want int
	}{{0.5, 0}, {1.5, 2}, {2.5, 2}, {-0.5, 0}, {-1.5, -2}, {3.49, 3}, {-7.6, -8}} {
		if got := nearestInt(c.f); got != c.want {
			t.Errorf("nearestInt(%g) = %d, want %d", c.f, got, c.want)
		}
	}
}

func randRow(r *rand.Rand, n int, scale float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * scale)
	}
	return x
}

// Quantise-dequantise error must stay within what each format can represent.
func TestQuantizeRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cases := []struct {
		t      Type
		relRMS float64 // bound on rms error / rms value
	}{{F32, 0}, {F16, 1e-3}, {BF16, 5e-3}, {Q8_0, 0.01}, {Q4_0, 0.15}, {Q4_K, 0.12}, {Q5_K, 0.06}, {Q6_K, 0.03}}
	for _, c := range cases {
		t.Run(c.t.String(), func(t *testing.T) {
			x := randRow(r, 1024, 0.3)
			x[5] = 0
			buf := make([]byte, c.t.RowSize(len(x)))
			if err := QuantizeRow(c.t, x, buf); err != nil {
				t.Fatal(err)
			}
			y := make([]float32, len(x))
			if err := DequantizeRow(c.t, buf, y); err != nil {
				t.Fatal(err)
			}
			var se, sv float64
			for i := range x {
				d := float64(x[i] - y[i])
				se += d * d
				sv += float64(x[i]) * float64(x[i])
			}
			rel := math.Sqrt(se / sv)
			if rel > c.relRMS || (c.relRMS == 0 && rel != 0) {
				t.Errorf("relative rms error %.4g > %.4g", rel, c.relRMS)
			}
			// Requantising dequantised values is idempotent for the
			// scale-per-block formats (the grid is representable).
			if c.t == Q8_0 || c.t == F16 || c.t == BF16 {
				buf2 := make([]byte, len(buf))
				QuantizeRow(c.t, y, buf2)
				if string(buf2) != string(buf) {
					t.Errorf("requantising changed the encoding")
				}
			}
		})
	}
}

func TestZeroAndConstantBlocks(t *testing.T) {
	for _, typ := range []Type{Q8_0, Q4_0, Q4_K, Q5_K, Q6_K} {
		for _, v := range []float32{0, 1, -3} {
			x := make([]float32, 256)
			for i := range x {
				x[i] = v
			}
			buf := make([]byte, typ.RowSize(256))
			QuantizeRow(typ, x, buf)
			y := make([]float32, 256)
			DequantizeRow(typ, buf, y)
			for i := range y {
				if math.IsNaN(float64(y[i])) || math.Abs(float64(y[i]-v)) > 0.05*math.Abs(float64(v))+1e-6 {
					t.Fatalf("%s constant %g: y[%d] = %g", typ, v, i, y[i])
				}
			}
		}
	}
}

func refDot(w []float32, a []float32) float64 {
	var s float64
	for i := range w {
		s += float64(w[i]) * float64(a[i])
	}
	return s
}

// The integer dot products equal the float64 dot of the dequantised weights
// with the dequantised activations (the integer parts are exact).
func TestDotProducts(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const n = 512
	for _, typ := range []Type{F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K} {
		t.Run(typ.String(), func(t *testing.T) {
			for trial := 0; trial < 20; trial++ {
				w := randRow(r, n, 1)
				x := randRow(r, n, 2)
				if trial == 0 {
					for i := range x[:256] {
						x[i] = 0 // an all-zero activation block
					}
				}
				buf := make([]byte, typ.RowSize(n))
				QuantizeRow(typ, w, buf)
				wd := make([]float32, n)
				DequantizeRow(typ, buf, wd)
				var got float32
				xd := make([]float32, n)
				switch typ {
				case F32:
					copy(xd, x)
					got = DotF32(buf, x)
				case F16:
					copy(xd, x)
					RoundF16(xd)
					got = DotF16(buf, xd)
				case BF16:
					copy(xd, x)
					RoundBF16(xd)
					got = DotBF16(buf, xd)
				case Q8_0, Q4_0:
					a := make([]BlockQ8_0, n/32)
					QuantizeQ8_0(x, a)
					for i := range a {
						for j, q := range a[i].Qs {
							xd[i*32+j] = float32(q) * a[i].D
						}
					}
					if typ == Q8_0 {
						got = DotQ8_0(buf, a)
					} else {
						got = DotQ4_0(buf, a)
					}
				default:
					a := make([]BlockQ8K, n/QK_K)
					QuantizeQ8K(x, a)
					for i := range a {
						s := 0
						for j, q := range a[i].Qs {
							xd[i*QK_K+j] = float32(q) * a[i].D
							s += int(q)
							if j%16 == 15 {
								if int(a[i].Bsums[j/16]) != s {
									t.Fatalf("bsums wrong")
								}
								s = 0
							}
						}
					}
					switch typ {
					case Q4_K:
						got = DotQ4K(buf, a)
					case Q5_K:
						got = DotQ5K(buf, a)
					case Q6_K:
						got = DotQ6K(buf, a)
					}
				}
				want := refDot(wd, xd)
				if math.Abs(float64(got)-want) > 1e-4*(math.Abs(want)+refAbs(wd, xd)) {
					t.Fatalf("trial %d: dot %g, reference %g", trial, got, want)
				}
				// And close to the unquantised dot product.
				exact := refDot(w, x)
				if math.Abs(float64(got)-exact) > 0.2*refAbs(w, x)+1e-3 {
					t.Fatalf("trial %d: dot %g far from exact %g", trial, got, exact)
				}
			}
		})
	}
}

func refAbs(w, a []float32) float64 {
	var s float64
	for i := range w {
		s += math.Abs(float64(w[i]) * float64(a[i]))
	}
	return s
}

func TestQ8KExtremes(t *testing.T) {
	x := make([]float32, 256)
	x[3] = -5
	x[7] = 5
	var b [1]BlockQ8K
	QuantizeQ8K(x, b[:])
	if b[0].Qs[3] != 127 && b[0].Qs[3] != -127 {
		t.Errorf("extreme quantised to %d", b[0].Qs[3])
	}
	if float32(b[0].Qs[7])*b[0].D != 5 && float32(b[0].Qs[7])*b[0].D != -5 {
		t.Errorf("q %d d %g", b[0].Qs[7], b[0].D)
	}
}

func TestRowSizeErrors(t *testing.T) {
	if err := QuantizeRow(Q4_K, make([]float32, 100), make([]byte, 10)); err == nil {
		t.Error("bad size accepted")
	}
	if err := DequantizeRow(Q2_K, make([]byte, Q2_K.RowSize(256)), make([]float32, 256)); err == nil {
		t.Error("unsupported type accepted")
	}
}
