// Package kernels holds the hot inner loops of the Spark engine: matrix-vector
// products (MatVec*) and their batched, row-tiled form for prefill (MatMul*)
// for every weight type droidgo runs (Q4_K, Q6_K, Q5_K, Q8_0, Q4_0, BF16, F16,
// F32), Q8_K activation quantisation, and small f32 helpers for attention,
// written in Go assembly for amd64 (AVX2+FMA+F16C; AVX-VNNI kernels for the
// interleaved layouts, AVX-512 VNNI and AMX matrix-matrix kernels for
// prefill where the CPU has them) and arm64 (NEON; SDOT and SMMLA
// matrix-matrix kernels where the CPU has dotprod and i8mm), with the
// pure-Go references of package quant as the fallback everywhere.
//
// Every entry point has exactly the semantics of the matching quant.Dot*
// reference applied row by row; only the floating-point accumulation order
// differs, so results agree to a few ulps of the row's magnitude while the
// integer parts of the quantised products are exact.
//
// The instruction set is chosen once at start-up: the best level the CPU
// supports, or the one the environment variable DROIDGO_ISA names
// (generic|avx2|avxvnni|avx512|amx on amd64, generic|neon|dotprod|i8mm on
// arm64); a name this CPU has no level of is a configuration error
// (EnvError). A level is only ever selectable when every kernel it installs
// is covered by this package's tests against the references.
//
// A weight matrix is rows consecutive rows, each the GGUF encoding of K
// weights (K = 256*len(a) for Q8_K activations, 32*len(a) for Q8_0 ones,
// len(x) for float activations), exactly as stored in the file, except for
// the *x8 entry points, which take the interleaved layout of Repack; any
// byte alignment is fine. Kernels only read their inputs and write out[:rows], so
// workers may run them concurrently on disjoint row ranges.
package kernels

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/droidgo/droidgo/model/quant"
)

// table is the set of kernels of one instruction-set level, complete: a
// level's table is built from the table of the level below it (the generic
// one at the bottom) with the kernels it brings replacing entries, so what
// it does not replace keeps the kernel of the level below. The one-vector
// entries q4k through bf16, dot and axpy are never nil; every other entry is
// nil exactly where no level up to this one has such a kernel, and its
// caller then does what the entry's comment says (TestLevelTables).
type table struct {
	q4k func(w []byte, rows int, a []quant.BlockQ8K, out []float32)
	// q4k4 multiplies rows by 4 activation vectors (a holds 4 x nb blocks),
	// writing out[t*ldo+r]; nil where only the one-vector kernel exists.
	q4k4 func(w []byte, rows int, a []quant.BlockQ8K, out []float32, ldo int)
	q5k  func(w []byte, rows int, a []quant.BlockQ8K, out []float32)
	q6k  func(w []byte, rows int, a []quant.BlockQ8K, out []float32)
	q6k4 func(w []byte, rows int, a []quant.BlockQ8K, out []float32, ldo int)
	q80  func(w []byte, rows int, a []quant.BlockQ8_0, out []float32)
	q804 func(w []byte, rows int, a []quant.BlockQ8_0, out []float32, ldo int)
	q40  func(w []byte, rows int, a []quant.BlockQ8_0, out []float32)
	f32  func(w []byte, rows int, x []float32, out []float32)
	f16  func(w []byte, rows int, x []float32, out []float32)
	bf16 func(w []byte, rows int, x []float32, out []float32)
	// f164 and bf164 multiply a panel of rows by 4 activation vectors
	// (floatx4.go), like q4k4.
	f164  floatX4
	bf164 floatX4
	// f1616 is f164 for 16 activation vectors f16x16Stride floats apart
	// and n <= f16Wide, each vector's result f164's bit for bit; nil runs
	// f164 on groups of 4.
	f1616 func(w []byte, ws int, x []float32, n, rows int, out []float32, ldo int, acc bool)
	dot   func(a, b []float32) float32
	// q8k is QuantizeQ8K; nil runs quant.QuantizeQ8K.
	q8k  func(x []float32, y []quant.BlockQ8K)
	axpy func(alpha float32, x, y []float32)
	// dotRows and axpyRows are DotRows and AxpyRows for a row length that
	// is a multiple of 8 (attn.go); nil runs dot and axpy per row.
	dotRows  func(q, k []float32, stride int, out []float32)
	axpyRows func(p, v []float32, stride int, o []float32)
	// expSum is ExpSum (attn.go); nil runs the float64 exp per element.
	expSum func(x []float32, scale, mx float32) float64
	// maxF32 and scale are MaxF32 and Scale for a multiple of 8 elements
	// (attn.go); nil runs the Go loops.
	maxF32 func(x []float32) float32
	scale  func(x []float32, s float32)
	// roundF16, roundBF16, encodeF16, q80Quant, geluErf and geluTab are
	// RoundF16, RoundBF16, EncodeF16, QuantizeQ8_0, GELUErfMul and
	// GELUTableMul (all but QuantizeQ8_0 for a multiple of 8 elements); nil
	// runs the Go references per element.
	roundF16  func(x []float32)
	roundBF16 func(x []float32)
	encodeF16 func(dst []byte, x []float32)
	q80Quant  func(x []float32, y []quant.BlockQ8_0)
	geluErf   func(y, g, u []float32)
	geluTab   func(y, g, u, tab []float32)

	// The interleaved-layout kernels (repack.go); rows is a multiple of 8.
	// nil runs the generic reference row by row (and RepackPays is false).
	q4kx8  func(w []byte, rows int, a []quant.BlockQ8K, out []float32)
	q4kx84 func(w []byte, rows int, a []quant.BlockQ8K, out []float32, ldo int)
	q6kx8  func(w []byte, rows int, a []quant.BlockQ8K, out []float32)
	q6kx84 func(w []byte, rows int, a []quant.BlockQ8K, out []float32, ldo int)
	q80x8  func(w []byte, rows int, a []quant.BlockQ8_0, out []float32)

	// Matrix-matrix kernels for prefill (gemm.go): the whole batched product
	// out[t*ldo+r] for b >= gemmMinTokens tokens, tiles of many tokens
	// times groups of rows. nil means MatMul* tiles the one- and 4-token
	// kernels above.
	q80mm   gemmQ80
	q80x8mm gemmQ80
	q40mm   gemmQ80
	q4kmm   gemmQ8K
	q4kx8mm gemmQ8K
	q5kmm   gemmQ8K
	q6kmm   gemmQ8K
	q6kx8mm gemmQ8K
	bf16mm  gemmBF16

	// Attention on matrix tiles (attntile.go): nil at levels without them.
	// halfSplit is HalfStage.Set's split of halves (a multiple of 16; nil:
	// Go per element).
	halfMul   func(a []float32, lda, m int, b *HalfTiles, j0, j1, k0, k1 int, out []float32, ldo int, acc bool)
	halfPack  func(t *HalfTiles, s *HalfStage, r0 int)
	halfSplit func(hi, lo []uint16, src []byte)
}

// level is one selectable instruction-set level, ordered from lowest.
type level struct {
	name string
	tab  table
	// invariant: every batched product of the level gives each token
	// exactly its one-token result (BatchInvariant), except the products
	// listed in variant, whose matrix-matrix kernels sum in their own
	// order. A level that claims nothing (invariant false) was not, or
	// could not be, checked.
	invariant bool
	variant   []product
	// prefill is PrefillBatch where the level sets it (0: by its kernels).
	prefill int
}

// product is one kind of weight matrix: a type in the file's layout or,
// x8, in the interleaved layout of repack.go.
type product struct {
	typ quant.Type
	x8  bool
}

var (
	levels       []level // available on this CPU, lowest first; levels[0] is generic
	cur          table
	curISA       string
	curInvariant bool
	curVariant   []product
	curPrefill   int
	envErr       error // what is wrong with DROIDGO_ISA, or nil
)

func init() {
	levels = append([]level{{name: "generic", tab: genericTable, invariant: true}}, archLevels()...)
	i, err := pick(strings.TrimSpace(os.Getenv("DROIDGO_ISA")))
	envErr = err
	use(levels[i])
}

// pick returns the index in levels of the level named want, the best one
// for "". A name this CPU has no level of is an *ISAError, and the best
// level is returned with it.
func pick(want string) (int, error) {
	best := len(levels) - 1
	if want == "" {
		return best, nil
	}
	for i, l := range levels {
		if l.name == want {
			return i, nil
		}
	}
	e := &ISAError{Value: want, Levels: Levels()}
	for _, m := range missingLevels() {
		if m.name == want {
			e.Reason = m.err
		}
	}
	return best, e
}

// ISAError is a DROIDGO_ISA value that names no level this CPU can run: an
// unknown name, or a level whose instructions the CPU (or OS) lacks.
type ISAError struct {
	Value  string   // the value given
	Levels []string // the levels this CPU can run, lowest first
	Reason error    // why this CPU cannot run the named level; nil for a name that is no level here
}

func (e *ISAError) Error() string {
	why := ""
	if e.Reason != nil {
		why = " (" + e.Reason.Error() + ")"
	}
	return fmt.Sprintf("DROIDGO_ISA=%q is not a kernel level this CPU can run%s; it can run %s", e.Value, why, strings.Join(e.Levels, ", "))
}

// EnvError returns what is wrong with the DROIDGO_ISA value the process
// started with, an *ISAError, or nil when it is unset or names a level
// this CPU can run. With a wrong value the kernels run the best level;
// opening a model refuses it (spark.Open), so every program that runs the
// engine reports the configuration error instead of silently ignoring it.
func EnvError() error { return envErr }

func use(l level) {
	cur, curISA, curInvariant, curVariant, curPrefill = l.tab, l.name, l.invariant, l.variant, l.prefill
}

// ISA reports the instruction-set level in use, e.g. "avx2" or "dotprod".
func ISA() string { return curISA }

// BatchInvariant reports whether the level in use computes every token of
// a batched product (MatMul*) bit for bit as the one-token product
// (MatVec*) computes it alone, for every weight type, batch size and
// range of rows: its multi-token kernels accumulate each output in the
// one-token kernels' order. Then a token's result does not depend on the
// batch it came in, which the engine's many-sequence decoding relies on
// for reproducible results. TestBatchInvariant proves it for every level
// that claims it; a level whose kernels were not (or could not be)
// checked does not claim it.
func BatchInvariant() bool { return curInvariant && len(curVariant) == 0 }

// BatchInvariantFor is BatchInvariant for the products of one weight type,
// in the file's layout or (interleaved) in Repack's: a level may keep a
// token independent of its batch for some types and not for others
// (avx512: the interleaved K-quants and F32, not Q8_0, F16 or BF16).
func BatchInvariantFor(typ quant.Type, interleaved bool) bool {
	return curInvariant && !slices.Contains(curVariant, product{typ, interleaved})
}

// Levels lists the levels this CPU can run, lowest first ("generic" is always
// first).
func Levels() []string {
	s := make([]string, len(levels))
	for i, l := range levels {
		s[i] = l.name
	}
	return s
}

// SetISA switches to the named level, which must be one of Levels (else the
// error is an *ISAError). It is meant for tests and benchmarks and must not
// run concurrently with any kernel.
func SetISA(name string) error {
	i, err := pick(name)
	if name == "" || err != nil {
		if err == nil {
			err = &ISAError{Value: name, Levels: Levels()}
		}
		return err
	}
	use(levels[i])
	return nil
}

// missingLevel is a level of this architecture the CPU cannot run, and why
// (missingLevels, per architecture).
type missingLevel struct {
	name string
	err  error
}

func checkQ(kind string, wlen, rows, rowBytes, outLen int) {
	if rows < 0 || wlen < rows*rowBytes || outLen < rows {
		panic(fmt.Sprintf("kernels: %s: %d rows of %d bytes need %d weight bytes (have %d) and %d outputs (have %d)",
			kind, rows, rowBytes, rows*rowBytes, wlen, rows, outLen))
	}
}

// MatVecQ4K sets out[r] = quant.DotQ4K(row r of w, a) for r < rows, where each
// row is len(a) Q4_K blocks (144 bytes each). It panics if w or out is short.
func MatVecQ4K(w []byte, rows int, a []quant.BlockQ8K, out []float32) {
	checkQ("MatVecQ4K", len(w), rows, len(a)*quant.BlockQ4_KSize, len(out))
	if rows == 0 || len(a) == 0 {
		clear(out[:rows])
		return
	}
	cur.q4k(w, rows, a, out)
}

// MatVecQ5K is MatVecQ4K for Q5_K rows (176 bytes per block).
func MatVecQ5K(w []byte, rows int, a []quant.BlockQ8K, out []float32) {
	checkQ("MatVecQ5K", len(w), rows, len(a)*quant.BlockQ5_KSize, len(out))
	if rows == 0 || len(a) == 0 {
		clear(out[:rows])
		return
	}
	cur.q5k(w, rows, a, out)
}

// MatVecQ6K is MatVecQ4K for Q6_K rows (210 bytes per block).
func MatVecQ6K(w []byte, rows int, a []quant.BlockQ8K, out []float32) {
	checkQ("MatVecQ6K", len(w), rows, len(a)*quant.BlockQ6_KSize, len(out))
	if rows == 0 || len(a) == 0 {
		clear(out[:rows])
		return
	}
	cur.q6k(w, rows, a, out)
}

// MatVecQ8_0 sets out[r] = quant.DotQ8_0(row r of w, a) for r < rows, where
// each row is len(a) Q8_0 blocks (34 bytes each). Activations must come from
// quant.QuantizeQ8_0 (quants in [-127, 127]).
func MatVecQ8_0(w []byte, rows int, a []quant.BlockQ8_0, out []float32) {
	checkQ("MatVecQ8_0", len(w), rows, len(a)*quant.BlockQ8_0Size, len(out))
	if rows == 0 || len(a) == 0 {
		clear(out[:rows])
		return
	}
	cur.q80(w, rows, a, out)
}

// MatVecQ4_0 is MatVecQ8_0 for Q4_0 rows (18 bytes per block).
func MatVecQ4_0(w []byte, rows int, a []quant.BlockQ8_0, out []float32) {
	checkQ("MatVecQ4_0", len(w), rows, len(a)*quant.BlockQ4_0Size, len(out))
	if rows == 0 || len(a) == 0 {
		clear(out[:rows])
		return
	}
	cur.q40(w, rows, a, out)
}

// MatVecF32 sets out[r] = quant.DotF32(row r of w, x) for r < rows, each row
// being len(x) little-endian float32s.
func MatVecF32(w []byte, rows int, x []float32, out []float32) {
	checkQ("MatVecF32", len(w), rows, 4*len(x), len(out))
	if rows == 0 || len(x) == 0 {
		clear(out[:rows])
		return
	}
	cur.f32(w, rows, x, out)
}

// MatVecF16 sets out[r] = quant.DotF16(row r of w, x) for r < rows, each row
// being len(x) IEEE halves. Like the reference, x is used as given: round it
// with quant.RoundF16 first to reproduce ggml's results.
func MatVecF16(w []byte, rows int, x []float32, out []float32) {
	checkQ("MatVecF16", len(w), rows, 2*len(x), len(out))
	if rows == 0 || len(x) == 0 {
		clear(out[:rows])
		return
	}
	if len(x) > floatChunk && cur.f164 != nil {
		matVecFloatLong(w, rows, x, out, 2, cur.f164)
		return
	}
	cur.f16(w, rows, x, out)
}

// MatVecBF16 sets out[r] = quant.DotBF16(row r of w, x) for r < rows, each row
// being len(x) bfloat16s. x must hold bf16 values (quant.RoundBF16), as
// ggml's activations for BF16 weights do: kernels that multiply in bf16
// (arm64's BFDOT) round any other value to the nearest bf16 first.
func MatVecBF16(w []byte, rows int, x []float32, out []float32) {
	checkQ("MatVecBF16", len(w), rows, 2*len(x), len(out))
	if rows == 0 || len(x) == 0 {
		clear(out[:rows])
		return
	}
	if len(x) > floatChunk && cur.bf164 != nil {
		matVecFloatLong(w, rows, x, out, 2, cur.bf164)
		return
	}
	cur.bf16(w, rows, x, out)
}

// DotF32 returns the dot product of a and b[:len(a)] (for attention scores).
func DotF32(a, b []float32) float32 {
	if len(b) < len(a) {
		panic(fmt.Sprintf("kernels: DotF32: len(b) = %d < len(a) = %d", len(b), len(a)))
	}
	if len(a) == 0 {
		return 0
	}
	return cur.dot(a, b)
}

// Axpy sets y[i] += alpha*x[i] for i < len(x) (for attention's weighted sum of
// values).
func Axpy(alpha float32, x, y []float32) {
	if len(y) < len(x) {
		panic(fmt.Sprintf("kernels: Axpy: len(y) = %d < len(x) = %d", len(y), len(x)))
	}
	if len(x) == 0 {
		return
	}
	cur.axpy(alpha, x, y)
}
