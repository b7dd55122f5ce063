package kernels

import (
	"bytes"
	"crypto/sha256"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/droidgo/droidgo/model/quant"
)

var x8Kernels = []struct {
	typ quant.Type
	mv  func([]byte, int, []quant.BlockQ8K, []float32)
	mm  func([]byte, int, *Q8KBatch, []float32, int)
	ref func([]byte, []quant.BlockQ8K) float32
}{
	{quant.Q4_K, MatVecQ4Kx8, MatMulQ4Kx8, quant.DotQ4K},
	{quant.Q6_K, MatVecQ6Kx8, MatMulQ6Kx8, quant.DotQ6K},
}

func repacked(t *testing.T, typ quant.Type, w []byte, rows, cols int) []byte {
	t.Helper()
	x := make([]byte, len(w)+1)[1:] // unaligned, like the plain matrices
	if err := Repack(typ, x, w, rows, cols); err != nil {
		t.Fatal(err)
	}
	return x
}

// Every row comes back byte for byte, and the layout really moves bytes.
func TestRepackRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, typ := range []quant.Type{quant.Q4_K, quant.Q6_K, quant.Q8_0} {
		k := struct{ typ quant.Type }{typ}
		lay := layouts[k.typ]
		for _, c := range []struct{ rows, nb int }{{8, 1}, {16, 3}, {24, 26}} {
			// nb counts 256-weight blocks: Q8_0 rows have 8 blocks per one.
			w := makeWeights(r, lay, c.nb*256/lay.n, c.rows, modeNormal)
			x := repacked(t, k.typ, w, c.rows, c.nb*256)
			if bytes.Equal(x, w) {
				t.Fatalf("%v: repacked matrix equals the plain one", k.typ)
			}
			rb := c.nb * 256 / lay.n * lay.bs
			row := make([]byte, rb)
			for i := 0; i < c.rows; i++ {
				RepackedRow(k.typ, row, x, i, c.nb*256)
				if !bytes.Equal(row, w[i*rb:(i+1)*rb]) {
					t.Fatalf("%v %dx%d: row %d differs after the round trip", k.typ, c.rows, c.nb*256, i)
				}
			}
		}
	}
}

// TestRepackArch holds the architecture's copy (repackArch: NEON on arm64,
// the AVX-512 packers on amd64) to repackGo byte for byte: every type, one and several groups, one and
// many blocks per row (odd counts too), unaligned source and destination,
// the source left as it was and nothing written around the destination.
func TestRepackArch(t *testing.T) {
	const guard = 64
	r := rand.New(rand.NewPCG(31, 32))
	ran := 0
	defer func() {
		if ran == 0 {
			t.Skipf("no assembly copy of the repack on this %s CPU", runtime.GOARCH)
		}
	}()
	for _, typ := range []quant.Type{quant.Q4_K, quant.Q6_K, quant.Q8_0} {
		for _, rows := range []int{8, 16, 40} {
			for _, cols := range []int{256, 768, 2816} {
				rb := typ.RowSize(cols)
				src := make([]byte, 3+rows*rb)[3:]
				for i := range src {
					src[i] = byte(r.Uint32())
				}
				orig := bytes.Clone(src)
				want := make([]byte, len(src))
				repackGo(typ, want, src, rows, rb)
				buf := bytes.Repeat([]byte{0xa5}, 2*guard+1+len(src))
				got := buf[guard+1 : guard+1+len(src)]
				if !repackArch(typ, got, src, rows, rb) {
					continue // repackGo's: this CPU has no copy of its own for it
				}
				ran++
				what := fmt.Sprintf("%v %d x %d", typ, rows, cols)
				if i := firstDiff(got, want); i >= 0 {
					t.Errorf("%s: byte %d (group block %d, offset %d) is %#02x, want %#02x", what, i, i/(Interleave*typ.TypeSize()), i%(Interleave*typ.TypeSize()), got[i], want[i])
				}
				if !bytes.Equal(src, orig) {
					t.Errorf("%s: the source changed", what)
				}
				if bytes.Count(buf[:guard+1], []byte{0xa5}) != guard+1 || bytes.Count(buf[guard+1+len(src):], []byte{0xa5}) != guard {
					t.Errorf("%s: wrote outside the destination", what)
				}
			}
		}
	}
}

// firstDiff returns the first index where a and b (of equal length) differ,
// or -1.
func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

func TestRepackRejectsBadShapes(t *testing.T) {
	src := make([]byte, 8*quant.BlockQ4_KSize)
	for _, c := range []struct {
		typ        quant.Type
		rows, cols int
		dst        int
	}{
		{quant.Q4_0, 8, 256, len(src)},     // no interleaved layout
		{quant.Q4_K, 4, 512, len(src)},     // not a whole group
		{quant.Q4_K, 8, 128, len(src)},     // not whole blocks
		{quant.Q4_K, 8, 256, len(src) - 1}, // short destination
		{quant.Q4_K, 16, 256, len(src)},    // short source
	} {
		if err := Repack(c.typ, make([]byte, c.dst), src, c.rows, c.cols); err == nil {
			t.Errorf("Repack(%v, %d x %d, dst %d) succeeded", c.typ, c.rows, c.cols, c.dst)
		}
	}
}

// The interleaved kernels equal the plain reference row by row, in every
// scale mode, at every level (the generic level runs the x8 reference).
func TestMatVecX8(t *testing.T) {
	forEachLevel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(23, 24))
		for _, k := range x8Kernels {
			lay := layouts[k.typ]
			for _, mode := range weightModes {
				if mode == modeExactMin && lay.dminOff < 0 {
					continue
				}
				for _, nb := range blockCounts {
					for _, rows := range []int{8, 16, 40} {
						w := makeWeights(r, lay, nb, rows, mode)
						x := repacked(t, k.typ, w, rows, nb*256)
						a := makeQ8K(r, nb, mode)
						acts := q8kFloats(a)
						out := make([]float32, rows+1)
						out[rows] = 42
						k.mv(x, rows, a, out)
						rb := nb * lay.bs
						for i := 0; i < rows; i++ {
							row := w[i*rb : (i+1)*rb]
							what := fmt.Sprintf("%v x8 %s K=%d rows=%d row %d", k.typ, mode, nb*256, rows, i)
							check(t, what, out[i], k.ref(row, a), magnitude(t, lay, row, acts), mode == modeExactD || mode == modeExactMin)
						}
						if out[rows] != 42 {
							t.Errorf("%v x8: wrote past rows", k.typ)
						}
					}
				}
			}
		}
	})
}

// Batched interleaved products over several row tiles and token counts that
// exercise the 4-token kernels and the one-token tail.
func TestMatMulX8(t *testing.T) {
	forEachLevel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(25, 26))
		for _, k := range x8Kernels {
			lay := layouts[k.typ]
			for _, mode := range []string{modeNormal, modeMax, modeExactD} {
				for _, c := range []struct{ rows, nb, b int }{{24, 26, 9}, {8, 1, 4}, {16, 8, 7}, {8, 2, 1}} {
					w := makeWeights(r, lay, c.nb, c.rows, mode)
					x := repacked(t, k.typ, w, c.rows, c.nb*256)
					a := make([]quant.BlockQ8K, 0, c.b*c.nb)
					for range c.b {
						a = append(a, makeQ8K(r, c.nb, mode)...)
					}
					ldo := c.rows + 3
					out := make([]float32, c.b*ldo)
					k.mm(x, c.rows, NewQ8KBatch(a, c.b), out, ldo)
					rb := c.nb * lay.bs
					for tok := 0; tok < c.b; tok++ {
						at := a[tok*c.nb : (tok+1)*c.nb]
						for i := 0; i < c.rows; i++ {
							row := w[i*rb : (i+1)*rb]
							what := fmt.Sprintf("%v x8 %s rows=%d nb=%d b=%d token %d row %d", k.typ, mode, c.rows, c.nb, c.b, tok, i)
							check(t, what, out[tok*ldo+i], k.ref(row, at), magnitude(t, lay, row, q8kFloats(at)), mode == modeExactD)
						}
						for i := c.rows; i < ldo && tok < c.b-1; i++ {
							if out[tok*ldo+i] != 0 {
								t.Fatalf("%v x8: wrote into the output stride gap", k.typ)
							}
						}
					}
				}
			}
		}
	})
}

// TestMatMulQ8_0x8 is TestMatVecX8 and TestMatMulX8 for the interleaved
// Q8_0 layout: one token (the decode kernel), a few (the one-token kernel per
// token) and a batch for the matrix-matrix kernels, over several 8-row groups.
func TestMatMulQ8_0x8(t *testing.T) {
	forEachLevel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(29, 30))
		lay := layouts[quant.Q8_0]
		for _, mode := range []string{modeNormal, modeMax, modeExactD} {
			for _, c := range []struct{ rows, nb, b int }{{24, 8 * 26, 1}, {8, 8, 1}, {16, 64, 5}, {8, 16, gemmMinTokens + 3}, {40, 8, 1}, {40, 24, 2*gemmMinTokens + 1}, {8, 16, 2 * gemmMinTokens}} {
				w := makeWeights(r, lay, c.nb, c.rows, mode)
				x := repacked(t, quant.Q8_0, w, c.rows, c.nb*32)
				a := make([]quant.BlockQ8_0, 0, c.b*c.nb)
				for range c.b {
					a = append(a, makeQ80(r, c.nb, mode)...)
				}
				ldo := c.rows + 3
				out := make([]float32, c.b*ldo)
				for i := range out {
					out[i] = -7
				}
				if c.b == 1 {
					MatVecQ8_0x8(x, c.rows, a, out[:c.rows+1])
				} else {
					MatMulQ8_0x8(x, c.rows, NewQ80Batch(a, c.b), out, ldo)
				}
				rb := c.nb * lay.bs
				for tok := 0; tok < c.b; tok++ {
					at := a[tok*c.nb : (tok+1)*c.nb]
					for i := 0; i < ldo; i++ {
						if i >= c.rows {
							if out[tok*ldo+i] != -7 {
								t.Fatalf("Q8_0 x8 %s %+v: wrote past the rows", mode, c)
							}
							continue
						}
						row := w[i*rb : (i+1)*rb]
						what := fmt.Sprintf("Q8_0 x8 %s rows=%d nb=%d b=%d token %d row %d", mode, c.rows, c.nb, c.b, tok, i)
						check(t, what, out[tok*ldo+i], quant.DotQ8_0(row, at), magnitude(t, lay, row, q80Floats(at)), mode == modeExactD)
					}
				}
			}
		}
	})
}

func TestX8RowsMustBeWholeGroups(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("MatVecQ4Kx8 with 12 rows did not panic")
		}
	}()
	MatVecQ4Kx8(make([]byte, 12*quant.BlockQ4_KSize), 12, make([]quant.BlockQ8K, 1), make([]float32, 12))
}

// BenchmarkMatVecX8 compares the interleaved kernels with the plain ones on
// the same matrices at every assembly level (GB/s of weight bytes, also per
// second of thread CPU time): an FFN shape
// streamed from memory and a 128x2048 matrix that stays in L2.
func BenchmarkMatVecX8(b *testing.B) {
	r := rand.New(rand.NewPCG(27, 28))
	for _, k := range x8Kernels {
		lay := layouts[k.typ]
		plain := map[quant.Type]func([]byte, int, []quant.BlockQ8K, []float32){quant.Q4_K: MatVecQ4K, quant.Q6_K: MatVecQ6K}[k.typ]
		for _, sh := range [][2]int{{2048, 6656}, {128, 2048}} {
			rows, cols := sh[0], sh[1]
			w := makeWeights(r, lay, cols/256, rows, modeNormal)
			x := make([]byte, len(w))
			if err := Repack(k.typ, x, w, rows, cols); err != nil {
				b.Fatal(err)
			}
			a := makeQ8K(r, cols/256, modeNormal)
			out := make([]float32, rows)
			for _, v := range []struct {
				name string
				w    []byte
				mv   func([]byte, int, []quant.BlockQ8K, []float32)
			}{{"plain", w, plain}, {"x8", x, k.mv}} {
				for _, l := range Levels() {
					if l == "generic" {
						continue
					}
					b.Run(fmt.Sprintf("%v/%dx%d/%s/%s", k.typ, rows, cols, v.name, l), func(b *testing.B) {
						if err := SetISA(l); err != nil {
							b.Fatal(err)
						}
						defer SetISA(Levels()[len(Levels())-1])
						b.SetBytes(int64(len(w)))
						runtime.LockOSThread()
						defer runtime.UnlockOSThread()
						cpu0 := threadCPU()
						for b.Loop() {
							v.mv(v.w, rows, a, out)
						}
						if cpu := (threadCPU() - cpu0).Seconds(); cpu > 0 {
							b.ReportMetric(float64(b.N)*float64(len(w))/cpu/1e9, "GB/cpu-s")
						}
					})
				}
			}
		}
	}
}

// BenchmarkRepack measures the load-time cost of interleaving (bytes of
// matrix per second, one thread, destination already faulted in): Repack,
// and beside it (TYPE_go) the Go copy where the architecture has its own.
func BenchmarkRepack(b *testing.B) {
	r := rand.New(rand.NewPCG(29, 30))
	for _, typ := range []quant.Type{quant.Q4_K, quant.Q6_K, quant.Q8_0} {
		const rows, cols = 2048, 2048
		lay := layouts[typ]
		w := makeWeights(r, lay, cols/lay.n, rows, modeNormal)
		x := make([]byte, len(w))
		b.Run(typ.String(), func(b *testing.B) {
			b.SetBytes(int64(len(w)))
			for b.Loop() {
				if err := Repack(typ, x, w, rows, cols); err != nil {
					b.Fatal(err)
				}
			}
		})
		if repackArch(typ, x, w, rows, len(w)/rows) {
			b.Run(typ.String()+"_go", func(b *testing.B) {
				b.SetBytes(int64(len(w)))
				for b.Loop() {
					repackGo(typ, x, w, rows, len(w)/rows)
				}
			})
		}
	}
}

// BenchmarkMatMulX8 is BenchmarkMatMulK for the interleaved layout: a
// 16-token batch through a 2048x2048 matrix, GB/s = weight bytes x tokens.
func BenchmarkMatMulX8(b *testing.B) {
	const rows, cols, toks = 2048, 2048, 16
	r := rand.New(rand.NewPCG(31, 32))
	for _, k := range x8Kernels {
		w := makeWeights(r, layouts[k.typ], cols/256, rows, modeNormal)
		x := make([]byte, len(w))
		if err := Repack(k.typ, x, w, rows, cols); err != nil {
			b.Fatal(err)
		}
		var a []quant.BlockQ8K
		for range toks {
			a = append(a, makeQ8K(r, cols/256, modeNormal)...)
		}
		out := make([]float32, rows*toks)
		plain := map[quant.Type]func([]byte, int, *Q8KBatch, []float32, int){quant.Q4_K: MatMulQ4K, quant.Q6_K: MatMulQ6K}[k.typ]
		for _, v := range []struct {
			name string
			w    []byte
			mm   func([]byte, int, *Q8KBatch, []float32, int)
		}{{"plain", w, plain}, {"x8", x, k.mm}} {
			b.Run(fmt.Sprintf("%v/%s", k.typ, v.name), func(b *testing.B) {
				b.SetBytes(int64(len(w) * toks))
				for b.Loop() {
					v.mm(v.w, rows, NewQ8KBatch(a, toks), out, rows)
				}
			})
		}
	}
}

var updateRepackFormat = flag.Bool("update-repack-format", false, "rewrite testdata/repack_format.golden (after bumping RepackFormat if the bytes changed)")

// The weights cache keeps Repack's bytes across runs, keyed with
// RepackFormat: the bytes of each layout are pinned here, so a change of a
// layout fails until RepackFormat is bumped and the golden file rewritten.
func TestRepackFormat(t *testing.T) {
	var out strings.Builder
	fmt.Fprintf(&out, "format %d\n", RepackFormat)
	for _, typ := range []quant.Type{quant.Q4_K, quant.Q6_K, quant.Q8_0} {
		const rows, cols = 16, 512
		r := rand.New(rand.NewPCG(uint64(typ), 7))
		src := make([]byte, rows*typ.RowSize(cols))
		for i := range src {
			src[i] = byte(r.Uint32())
		}
		dst := make([]byte, len(src))
		if err := Repack(typ, dst, src, rows, cols); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&out, "%v %x\n", typ, sha256.Sum256(dst))
	}
	const golden = "testdata/repack_format.golden"
	old, err := os.ReadFile(golden)
	if *updateRepackFormat {
		if err == nil && string(old) != out.String() && strings.HasPrefix(string(old), fmt.Sprintf("format %d\n", RepackFormat)) {
			t.Fatalf("the interleaved bytes changed: bump RepackFormat before rewriting %s", golden)
		}
		if err := os.WriteFile(golden, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if string(old) != out.String() {
		t.Errorf("Repack's bytes are not those of %s:\n%s\nwant:\n%s\nA changed layout needs RepackFormat bumped (weights caches hold the old one), then -update-repack-format.", golden, out.String(), old)
	}
}
