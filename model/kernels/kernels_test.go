package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/droidgo/droidgo/model/quant"
)

// forEachLevel runs f once for every instruction-set level this CPU has, so
// one test run covers the generic and every assembly path. With
// DROIDGO_TEST_ONE_LEVEL=1 it runs only the level in use: the emulated arm64
// runs set it, one emulated CPU model per level, which keeps them short.
func forEachLevel(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	orig := ISA()
	if os.Getenv("DROIDGO_TEST_ONE_LEVEL") == "1" {
		t.Run(orig, f)
		return
	}
	t.Cleanup(func() {
		if err := SetISA(orig); err != nil {
			t.Fatal(err)
		}
	})
	for _, l := range Levels() {
		if err := SetISA(l); err != nil {
			t.Fatal(err)
		}
		t.Run(l, f)
	}
	for _, tw := range twinLevels() {
		use(tw)
		t.Run(tw.name, f)
	}
	for _, m := range missingLevels() {
		t.Run(m.name, func(t *testing.T) {
			if os.Getenv("DROIDGO_REQUIRE_ISA") == m.name {
				t.Fatalf("DROIDGO_REQUIRE_ISA=%s but the level is not available: %v", m.name, m.err)
			}
			t.Skipf("level %s NOT tested: %v (set DROIDGO_REQUIRE_ISA=%s to make this fail)", m.name, m.err, m.name)
		})
	}
}

// TestRequiredISA fails when DROIDGO_REQUIRE_ISA names a level this CPU
// does not offer, even for a name no test helper knows.
func TestRequiredISA(t *testing.T) {
	want := os.Getenv("DROIDGO_REQUIRE_ISA")
	if want == "" {
		t.Skip("DROIDGO_REQUIRE_ISA not set")
	}
	if !slices.Contains(Levels(), want) {
		t.Fatalf("DROIDGO_REQUIRE_ISA=%s, but this CPU offers only %v", want, Levels())
	}
}

// Weight scale modes: how the f16 d (and dmin) of every block are chosen.
const (
	modeNormal    = "normal"    // realistic small scales of both signs
	modeZero      = "zero"      // every third block has d = dmin = 0
	modeSubnormal = "subnormal" // f16 subnormal scales
	modeMax       = "max"       // all quant bits set: largest |q| and scales
	modeExactD    = "exact-d"   // d = 1, dmin = 0, D = 1: result is the integer sum
	modeExactMin  = "exact-min" // d = 0, dmin = 1, D = 1: result is minus the mins sum
)

var weightModes = []string{modeNormal, modeZero, modeSubnormal, modeMax, modeExactD, modeExactMin}

type layout struct {
	typ      quant.Type
	bs       int // bytes per block
	n        int // weights per block
	dOff     int // offset of the f16 d
	dminOff  int // offset of the f16 dmin, or -1
	setMaxQs func(blk []byte, r *rand.Rand)
}

var layouts = map[quant.Type]layout{
	quant.Q4_K: {quant.Q4_K, quant.BlockQ4_KSize, 256, 0, 2, func(b []byte, _ *rand.Rand) {
		for i := 4; i < len(b); i++ {
			b[i] = 0xFF
		}
	}},
	quant.Q5_K: {quant.Q5_K, quant.BlockQ5_KSize, 256, 0, 2, func(b []byte, _ *rand.Rand) {
		for i := 4; i < len(b); i++ {
			b[i] = 0xFF
		}
	}},
	quant.Q6_K: {quant.Q6_K, quant.BlockQ6_KSize, 256, 208, -1, func(b []byte, r *rand.Rand) {
		for i := 0; i < 192; i++ {
			b[i] = 0xFF
		}
		for i := 192; i < 208; i++ {
			b[i] = []byte{0x7F, 0x80}[r.IntN(2)]
		}
	}},
	quant.Q8_0: {quant.Q8_0, quant.BlockQ8_0Size, 32, 0, -1, func(b []byte, r *rand.Rand) {
		for i := 2; i < len(b); i++ {
			b[i] = []byte{0x7F, 0x81, 0x80}[r.IntN(3)]
		}
	}},
	quant.Q4_0: {quant.Q4_0, quant.BlockQ4_0Size, 32, 0, -1, func(b []byte, r *rand.Rand) {
		for i := 2; i < len(b); i++ {
			b[i] = []byte{0xFF, 0x00, 0x0F, 0xF0}[r.IntN(4)]
		}
	}},
}

func putF16(b []byte, v uint16) { binary.LittleEndian.PutUint16(b, v) }

func randScale(r *rand.Rand, mode string) uint16 {
	switch mode {
	case modeSubnormal:
		return uint16(1+r.IntN(0x3FF)) | uint16(r.IntN(2))<<15
	case modeExactD, modeExactMin:
		return 0x3C00
	}
	v := float32(0.0005 + 0.02*r.Float64())
	if r.IntN(4) == 0 {
		v = -v
	}
	return quant.FP32ToFP16(v)
}

// makeWeights returns rows rows of nb blocks of random quants with scales
// chosen by mode, starting one byte into the buffer so kernels see an
// unaligned matrix as they may in an mmapped file.
func makeWeights(r *rand.Rand, lay layout, nb, rows int, mode string) []byte {
	buf := make([]byte, 1+rows*nb*lay.bs)
	w := buf[1:]
	for i := range w {
		w[i] = byte(r.Uint32())
	}
	for b := 0; b < rows*nb; b++ {
		blk := w[b*lay.bs : (b+1)*lay.bs]
		if mode == modeMax {
			lay.setMaxQs(blk, r)
		}
		d, dmin := randScale(r, mode), randScale(r, mode)
		switch {
		case mode == modeZero && b%3 == 0:
			d, dmin = 0, 0
		case mode == modeExactD:
			dmin = 0
		case mode == modeExactMin:
			d = 0
		}
		putF16(blk[lay.dOff:], d)
		if lay.dminOff >= 0 {
			putF16(blk[lay.dminOff:], dmin)
		}
	}
	return w
}

func randQ8(r *rand.Rand, q []int8, mode string, blk int) {
	for j := range q {
		switch {
		case mode == modeMax && blk%2 == 0:
			q[j] = 127
		case mode == modeMax:
			q[j] = []int8{127, -127}[r.IntN(2)]
		case mode == modeExactD || mode == modeExactMin:
			// Small enough that every partial sum stays an exact float32.
			q[j] = int8(r.IntN(31) - 15)
		default:
			q[j] = int8(r.IntN(255) - 127)
		}
	}
}

func randD(r *rand.Rand, mode string, blk int) float32 {
	switch {
	case mode == modeExactD || mode == modeExactMin:
		return 1
	case mode == modeZero && blk%4 == 1:
		return 0
	}
	return float32(r.Float64()*0.1 - 0.02)
}

func makeQ8K(r *rand.Rand, nb int, mode string) []quant.BlockQ8K {
	a := make([]quant.BlockQ8K, nb)
	for i := range a {
		randQ8(r, a[i].Qs[:], mode, i)
		a[i].D = randD(r, mode, i)
		for j := range a[i].Bsums {
			s := 0
			for _, q := range a[i].Qs[16*j : 16*j+16] {
				s += int(q)
			}
			a[i].Bsums[j] = int16(s)
		}
	}
	return a
}

func makeQ80(r *rand.Rand, nb int, mode string) []quant.BlockQ8_0 {
	a := make([]quant.BlockQ8_0, nb)
	for i := range a {
		randQ8(r, a[i].Qs[:], mode, i)
		a[i].D = quant.FP16ToFP32(quant.FP32ToFP16(randD(r, mode, i)))
	}
	return a
}

// magnitude bounds the sum of the absolute values of every product a kernel
// may add (the d and dmin terms counted separately), which scales the
// rounding error any accumulation order can make.
func magnitude(t *testing.T, lay layout, row []byte, acts []float32) float64 {
	t.Helper()
	return magnitudeOf(absWeights(t, lay, row, len(acts)), acts)
}

// absWeights returns |w| of every weight of row, the scale and the min
// parts (K-quants) taken apart, for magnitudeOf.
func absWeights(t *testing.T, lay layout, row []byte, n int) []float64 {
	t.Helper()
	part := func(zeroOff int) []float32 {
		c := append([]byte(nil), row...)
		if zeroOff >= 0 {
			for b := 0; b < len(c)/lay.bs; b++ {
				putF16(c[b*lay.bs+zeroOff:], 0)
			}
		}
		out := make([]float32, n)
		if err := quant.DequantizeRow(lay.typ, c, out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	wd := part(lay.dminOff)
	var wm []float32
	if lay.dminOff >= 0 {
		wm = part(lay.dOff)
	}
	v := make([]float64, n)
	for k := range v {
		v[k] = math.Abs(float64(wd[k]))
		if wm != nil {
			v[k] += math.Abs(float64(wm[k]))
		}
	}
	return v
}

// magnitudeOf is the sum of |w*x|, the scale of a dot product's rounding.
func magnitudeOf(w []float64, acts []float32) float64 {
	var m float64
	for k, x := range acts {
		m += w[k] * math.Abs(float64(x))
	}
	return m
}

func q8kFloats(a []quant.BlockQ8K) []float32 {
	x := make([]float32, 0, len(a)*256)
	for _, b := range a {
		for _, q := range b.Qs {
			x = append(x, b.D*float32(q))
		}
	}
	return x
}

func q80Floats(a []quant.BlockQ8_0) []float32 {
	x := make([]float32, 0, len(a)*32)
	for _, b := range a {
		for _, q := range b.Qs {
			x = append(x, b.D*float32(q))
		}
	}
	return x
}

// check compares one kernel output with the reference: exactly in the exact
// modes (every intermediate is an integer far below 2^24), else within 1e-5
// of the magnitude of the products.
func check(t *testing.T, what string, got, want float32, mag float64, exact bool) {
	t.Helper()
	if exact {
		if got != want {
			t.Errorf("%s: got %v, want exactly %v", what, got, want)
		}
		return
	}
	if math.IsNaN(float64(got)) || math.Abs(float64(got)-float64(want)) > 1e-5*mag+1e-37 {
		t.Errorf("%s: got %v, want %v (diff %g, magnitude %g)", what, got, want, float64(got)-float64(want), mag)
	}
}

var (
	blockCounts = []int{1, 8, 26} // K = 256, 2048, 6656 for K-quants
	rowCounts   = []int{1, 3, 8}
)

func TestMatVecK(t *testing.T) {
	kernels := []struct {
		typ quant.Type
		mv  func([]byte, int, []quant.BlockQ8K, []float32)
		ref func([]byte, []quant.BlockQ8K) float32
	}{
		{quant.Q4_K, MatVecQ4K, quant.DotQ4K},
		{quant.Q5_K, MatVecQ5K, quant.DotQ5K},
		{quant.Q6_K, MatVecQ6K, quant.DotQ6K},
	}
	forEachLevel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(1, 2))
		for _, k := range kernels {
			lay := layouts[k.typ]
			for _, mode := range weightModes {
				if mode == modeExactMin && lay.dminOff < 0 {
					continue
				}
				for _, nb := range blockCounts {
					for _, rows := range rowCounts {
						w := makeWeights(r, lay, nb, rows, mode)
						a := makeQ8K(r, nb, mode)
						acts := q8kFloats(a)
						out := make([]float32, rows+1)
						out[rows] = 42 // must stay untouched
						k.mv(w, rows, a, out)
						rb := nb * lay.bs
						for i := 0; i < rows; i++ {
							row := w[i*rb : (i+1)*rb]
							what := fmt.Sprintf("%v %s K=%d rows=%d row %d", k.typ, mode, nb*256, rows, i)
							check(t, what, out[i], k.ref(row, a), magnitude(t, lay, row, acts), mode == modeExactD || mode == modeExactMin)
						}
						if out[rows] != 42 {
							t.Errorf("%v: wrote past rows", k.typ)
						}
					}
				}
			}
		}
	})
}

func TestMatVecQ0(t *testing.T) {
	kernels := []struct {
		typ quant.Type
		mv  func([]byte, int, []quant.BlockQ8_0, []float32)
		ref func([]byte, []quant.BlockQ8_0) float32
	}{
		{quant.Q8_0, MatVecQ8_0, quant.DotQ8_0},
		{quant.Q4_0, MatVecQ4_0, quant.DotQ4_0},
	}
	forEachLevel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(3, 4))
		for _, k := range kernels {
			lay := layouts[k.typ]
			for _, mode := range weightModes {
				if mode == modeExactMin {
					continue
				}
				for _, nb := range []int{1, 2, 3, 64, 65, 208} {
					for _, rows := range rowCounts {
						w := makeWeights(r, lay, nb, rows, mode)
						a := makeQ80(r, nb, mode)
						acts := q80Floats(a)
						out := make([]float32, rows+1)
						out[rows] = 42
						k.mv(w, rows, a, out)
						rb := nb * lay.bs
						for i := 0; i < rows; i++ {
							row := w[i*rb : (i+1)*rb]
							what := fmt.Sprintf("%v %s K=%d rows=%d row %d", k.typ, mode, nb*32, rows, i)
							check(t, what, out[i], k.ref(row, a), magnitude(t, lay, row, acts), mode == modeExactD)
						}
						if out[rows] != 42 {
							t.Errorf("%v: wrote past rows", k.typ)
						}
					}
				}
			}
		}
	})
}

func TestMatVecFloat(t *testing.T) {
	kernels := []struct {
		typ  quant.Type
		es   int
		mv   func([]byte, int, []float32, []float32)
		ref  func([]byte, []float32) float32
		enc  func(float32) []byte
		dec  func([]byte) float32
		prep func([]float32)
	}{
		{quant.F32, 4, MatVecF32, quant.DotF32,
			func(v float32) []byte { return binary.LittleEndian.AppendUint32(nil, math.Float32bits(v)) },
			func(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }, func([]float32) {}},
		{quant.F16, 2, MatVecF16, quant.DotF16,
			func(v float32) []byte { return binary.LittleEndian.AppendUint16(nil, quant.FP32ToFP16(v)) },
			func(b []byte) float32 { return quant.FP16ToFP32(binary.LittleEndian.Uint16(b)) }, quant.RoundF16},
		{quant.BF16, 2, MatVecBF16, quant.DotBF16,
			func(v float32) []byte { return binary.LittleEndian.AppendUint16(nil, quant.FP32ToBF16(v)) },
			func(b []byte) float32 { return quant.BF16ToFP32(binary.LittleEndian.Uint16(b)) }, quant.RoundBF16},
	}
	forEachLevel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(5, 6))
		for _, k := range kernels {
			for _, n := range []int{1, 7, 8, 31, 33, 256, 2053, 6656} {
				for _, rows := range rowCounts {
					for _, special := range []string{"random", "subnormal", "small-int"} {
						w := []byte{0} // unaligned start
						for i := 0; i < rows*n; i++ {
							v := float32(r.NormFloat64())
							switch special {
							case "subnormal":
								v = float32(r.IntN(1023)) * (1.0 / (1 << 24)) // f16 subnormals
							case "small-int":
								v = float32(r.IntN(17) - 8)
							}
							w = append(w, k.enc(v)...)
						}
						w = w[1:]
						x := make([]float32, n)
						for i := range x {
							x[i] = float32(r.NormFloat64())
							if special == "small-int" {
								x[i] = float32(r.IntN(17) - 8)
							}
						}
						k.prep(x)
						out := make([]float32, rows+1)
						out[rows] = 42
						k.mv(w, rows, x, out)
						rb := n * k.es
						for i := 0; i < rows; i++ {
							row := w[i*rb : (i+1)*rb]
							var mag float64
							for j := range x {
								mag += math.Abs(float64(k.dec(row[j*k.es:]) * x[j]))
							}
							what := fmt.Sprintf("%v %s n=%d rows=%d row %d", k.typ, special, n, rows, i)
							check(t, what, out[i], k.ref(row, x), mag, special == "small-int")
						}
						if out[rows] != 42 {
							t.Errorf("%v: wrote past rows", k.typ)
						}
					}
				}
			}
		}
	})
}

func TestDotAxpy(t *testing.T) {
	forEachLevel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(7, 8))
		for _, n := range []int{1, 5, 8, 32, 37, 256, 1000} {
			a, b := make([]float32, n), make([]float32, n+3)
			for i := range a {
				a[i] = float32(r.NormFloat64())
			}
			for i := range b {
				b[i] = float32(r.NormFloat64())
			}
			var mag float64
			for i := range a {
				mag += math.Abs(float64(a[i] * b[i]))
			}
			check(t, fmt.Sprintf("DotF32 n=%d", n), DotF32(a, b), dotGeneric(a, b), mag, false)

			alpha := float32(r.NormFloat64())
			y := append([]float32(nil), b...)
			want := append([]float32(nil), b...)
			Axpy(alpha, a, y)
			axpyGeneric(alpha, a, want)
			for i := range y {
				// FMA rounds once where the reference rounds twice.
				if d := math.Abs(float64(y[i] - want[i])); d > 1e-6*(math.Abs(float64(alpha*a[min(i, n-1)]))+math.Abs(float64(b[i]))) {
					t.Errorf("Axpy n=%d [%d]: got %v, want %v", n, i, y[i], want[i])
				}
			}
		}
	})
}

func TestLevels(t *testing.T) {
	ls := Levels()
	if len(ls) == 0 || ls[0] != "generic" {
		t.Fatalf("Levels() = %v, want generic first", ls)
	}
	if err := SetISA("no-such-level"); err == nil {
		t.Error("SetISA accepted an unknown level")
	}
	t.Logf("levels %v, in use %s", ls, ISA())
}

func TestShortBuffersPanic(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("MatVecQ4K with a short weight slice did not panic")
		}
	}()
	MatVecQ4K(make([]byte, 100), 1, make([]quant.BlockQ8K, 1), make([]float32, 1))
}

// TestLevelTables checks every level's table: the one-vector kernels are
// never nil, and no kernel that a lower level of this CPU has of its own is
// nil or the generic one at a higher level (the symptom of a level built
// from the wrong table, or missing a line, which every other test would
// pass since the generic kernels compute the same). The exceptions are
// entries a level leaves out on purpose.
func TestLevelTables(t *testing.T) {
	required := map[string]bool{"q4k": true, "q5k": true, "q6k": true, "q80": true, "q40": true,
		"f32": true, "f16": true, "bf16": true, "dot": true, "axpy": true}
	// The avx512 and amx levels keep Q8_0 matrices in the file's layout
	// (their plain Q8_0 kernels need no repack), though the avxvnni level
	// below them repacks them.
	optional := map[string]bool{"avx512 q80x8": true, "avx512 q80x8mm": true, "amx q80x8": true, "amx q80x8mm": true}
	g := reflect.ValueOf(genericTable)
	typ := g.Type()
	own := func(l level, i int) bool { // l has a kernel of its own at entry i
		f := reflect.ValueOf(l.tab).Field(i)
		return !f.IsNil() && (g.Field(i).IsNil() || f.Pointer() != g.Field(i).Pointer())
	}
	for li, l := range levels {
		v := reflect.ValueOf(l.tab)
		for i := 0; i < v.NumField(); i++ {
			name := typ.Field(i).Name
			if required[name] && v.Field(i).IsNil() {
				t.Errorf("level %s: %s is nil", l.name, name)
			}
			if own(l, i) || optional[l.name+" "+name] {
				continue
			}
			for _, below := range levels[:li] {
				if own(below, i) {
					t.Errorf("level %s: %s is nil or the generic kernel, but level %s below it has one", l.name, name, below.name)
					break
				}
			}
		}
	}
	for name := range required {
		if _, ok := typ.FieldByName(name); !ok {
			t.Errorf("the table has no entry %s: update required", name)
		}
	}
}
