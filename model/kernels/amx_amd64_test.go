//go:build !purego

package kernels

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/droidgo/droidgo/model/quant"
)

func hasLevel(name string) bool {
	for _, l := range Levels() {
		if l == name {
			return true
		}
	}
	return false
}

// amxSkip is the message of a test that needs the amx level on a machine
// where it is not offered; under DROIDGO_REQUIRE_ISA=amx it fails instead.
func amxSkip(t *testing.T) {
	t.Helper()
	if os.Getenv("DROIDGO_REQUIRE_ISA") == "amx" {
		t.Fatalf("DROIDGO_REQUIRE_ISA=amx but the amx level is not offered: %v", amxErr)
	}
	t.Skipf("no amx level (%v): AMX kernels NOT tested on this machine (DROIDGO_REQUIRE_ISA=amx makes this fail)", amxErr)
}

// TestAMXLevel: where the CPU has AMX the level is offered (or the reason
// is a refusal this test shows), and the selection refuses AMX when the
// kernel denies the tile state or the probe disagrees with the reference.
func TestAMXLevel(t *testing.T) {
	denied := func() error { return syscall.EPERM }
	granted := func() error { return nil }
	wrong := func() error { return errors.New("got 3, want 4") }
	for _, c := range []struct {
		name    string
		cpu     bool
		request func() error
		probe   func() error
		ok      bool
	}{
		{"no AMX in CPUID", false, granted, amxProbe, false},
		{"permission denied", true, denied, amxProbe, false},
		{"probe disagrees", true, granted, wrong, false},
		{"all agree", true, granted, func() error { return nil }, true},
	} {
		err := amxUsable(c.cpu, c.request, c.probe)
		if (err == nil) != c.ok {
			t.Errorf("%s: amxUsable = %v, want ok=%v", c.name, err, c.ok)
		}
	}
	if cpuHasAMX() && !hasLevel("amx") {
		t.Logf("the CPU has AMX but the level is not offered: %v", amxErr)
	}
	if !hasLevel("amx") {
		amxSkip(t)
	}
	if got := Levels()[len(Levels())-1]; got != "amx" {
		t.Errorf("best level = %q, want amx", got)
	}
}

// The assembly packers write exactly what their Go forms do.
func TestAMXPackers(t *testing.T) {
	if !hasLevel("amx") {
		amxSkip(t)
	}
	r := rand.New(rand.NewPCG(39, 40))
	for _, nb := range []int{1, 3, 64} {
		rb := nb*quant.BlockQ8_0Size + 5
		src := make([]byte, 16*rb)
		for i := range src {
			src[i] = byte(r.Uint32())
		}
		pk1, pk2 := make([]byte, 512*nb), make([]byte, 512*nb)
		ws1, ws2 := make([]float32, 16*nb), make([]float32, 16*nb)
		packQ80(pk1, ws1, src, rb, nb)
		packQ80AMX(&pk2[0], &ws2[0], &src[0], rb, nb)
		if !bytes.Equal(pk1, pk2) {
			t.Fatalf("packQ80AMX nb=%d: quants differ from packQ80", nb)
		}
		for i := range ws1 {
			if math.Float32bits(ws1[i]) != math.Float32bits(ws2[i]) && !(ws1[i] != ws1[i] && ws2[i] != ws2[i]) { // NaN payloads may differ
				t.Fatalf("packQ80AMX nb=%d: scale %d = %v, want %v", nb, i, ws2[i], ws1[i])
			}
		}
	}
}

// pack16Q4K / pack16Q6K interleave 16 plain rows exactly as packGroupQ4K /
// packGroupQ6K do 8 at a time.
func TestAMXPack16(t *testing.T) {
	if !hasLevel("amx") {
		amxSkip(t)
	}
	r := rand.New(rand.NewPCG(41, 42))
	var planes [256]byte
	for _, c := range []struct {
		typ    quant.Type
		pack16 func(g, src []byte, rb int, planes *[256]byte)
		pack8  func(gb, src []byte, rb int)
	}{
		{quant.Q4_K, pack16Q4K, packGroupQ4K},
		{quant.Q6_K, pack16Q6K, packGroupQ6K},
	} {
		bs := c.typ.TypeSize()
		rb := 3*bs + 7
		src := make([]byte, 16*rb)
		for i := range src {
			src[i] = byte(r.Uint32())
		}
		want := make([]byte, 16*bs)
		c.pack8(want[:8*bs], src[bs:], rb)
		c.pack8(want[8*bs:], src[8*rb+bs:], rb)
		got := make([]byte, 16*bs)
		c.pack16(got, src[bs:], rb, &planes)
		if !bytes.Equal(got, want) {
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("%v: byte %d of the group blocks = %#x, want %#x", c.typ, i, got[i], want[i])
				}
			}
		}
	}
}

// One pooled scratch serves every AMX kernel in turn: each must set up its
// own tile configuration, whatever the previous one left.
func TestAMXKernelsShareScratch(t *testing.T) {
	if !hasLevel("amx") {
		amxSkip(t)
	}
	r := rand.New(rand.NewPCG(43, 44))
	const rows, nb, b = 16, 2, 17
	w8 := makeWeights(r, layouts[quant.Q8_0], 8*nb, rows, modeExactD)
	w4 := makeWeights(r, layouts[quant.Q4_K], nb, rows, modeExactD)
	var a8 []quant.BlockQ8_0
	var ak []quant.BlockQ8K
	for range b {
		a8 = append(a8, makeQ80(r, 8*nb, modeExactD)...)
		ak = append(ak, makeQ8K(r, nb, modeExactD)...)
	}
	out := make([]float32, b*rows)
	for i := 0; i < 3; i++ {
		q80AMX(w8, rows, NewQ80Batch(a8, b), out, rows)
		for tok := 0; tok < b; tok++ {
			for row := 0; row < rows; row++ {
				rb := 8 * nb * quant.BlockQ8_0Size
				if want := quant.DotQ8_0(w8[row*rb:(row+1)*rb], a8[tok*8*nb:(tok+1)*8*nb]); out[tok*rows+row] != want {
					t.Fatalf("round %d: Q8_0 after Q4_K token %d row %d = %v, want %v", i, tok, row, out[tok*rows+row], want)
				}
			}
		}
		q4kAMX(w4, rows, NewQ8KBatch(ak, b), out, rows)
		for tok := 0; tok < b; tok++ {
			for row := 0; row < rows; row++ {
				rb := nb * quant.BlockQ4_KSize
				if want := quant.DotQ4K(w4[row*rb:(row+1)*rb], ak[tok*nb:(tok+1)*nb]); out[tok*rows+row] != want {
					t.Fatalf("round %d: Q4_K after Q8_0 token %d row %d = %v, want %v", i, tok, row, out[tok*rows+row], want)
				}
			}
		}
	}
}

// A batch so large that the K-quant products keep their sums for two
// groups of row tiles (qkAccBytes), with leftover rows: every group must
// land in its own rows of the output.
func TestAMXSumGroups(t *testing.T) {
	if !hasLevel("amx") {
		amxSkip(t)
	}
	const rows, nb, b, ldo = 136, 1, 1040, 139
	if tiles := (b + 15) / 16; qkAccBytes/(tiles*1024) >= rows/16 {
		t.Fatalf("%d tokens fit one group of %d row tiles", b, rows/16)
	}
	r := rand.New(rand.NewPCG(45, 46))
	var ak []quant.BlockQ8K
	for range b {
		ak = append(ak, makeQ8K(r, nb, modeExactD)...)
	}
	for _, k := range []struct {
		typ quant.Type
		x8  bool
		mm  func([]byte, int, *Q8KBatch, []float32, int)
		ref func([]byte, []quant.BlockQ8K) float32
	}{
		{quant.Q4_K, true, q4kx8AMX, quant.DotQ4K},
		{quant.Q6_K, false, q6kAMX, quant.DotQ6K},
	} {
		w := makeWeights(r, layouts[k.typ], nb, rows, modeExactD)
		wk := w
		if k.x8 {
			wk = repacked(t, k.typ, w, rows, nb*256)
		}
		out := make([]float32, b*ldo)
		k.mm(wk, rows, NewQ8KBatch(ak, b), out, ldo)
		rb := len(w) / rows
		for tok := 0; tok < b; tok++ {
			for row := 0; row < rows; row++ {
				if want := k.ref(w[row*rb:(row+1)*rb], ak[tok*nb:(tok+1)*nb]); out[tok*ldo+row] != want {
					t.Fatalf("%v x8=%v token %d row %d = %v, want %v", k.typ, k.x8, tok, row, out[tok*ldo+row], want)
				}
			}
		}
	}
}

// TestAMXEncodings disassembles every instruction the AMX kernels write as
// bytes (a #define of BYTEs with its AT&T mnemonic in a comment) with
// objdump and compares it with the comment, so a wrong byte cannot hide
// behind the right name. It needs no AMX, only binutils' objdump.
func TestAMXEncodings(t *testing.T) {
	n := checkByteEncodings(t, "amx*_amd64.s")
	t.Logf("%d byte-encoded AMX instructions match their mnemonics", n)
}

// checkByteEncodings disassembles every byte-encoded instruction of the
// files matching glob (#define NAME BYTE $0x..; ... // mnemonic) with
// objdump and compares it with its comment; it returns their number.
func checkByteEncodings(t *testing.T, glob string) int {
	t.Helper()
	objdump, err := exec.LookPath("objdump")
	if err != nil {
		t.Skip("objdump not installed (binutils): byte encodings NOT checked")
	}
	files, _ := filepath.Glob(glob)
	def := regexp.MustCompile(`^#define (\w+) ((?:BYTE \$0x[0-9A-F]{2}; )*BYTE \$0x[0-9A-F]{2}) // (.+)$`)
	hex := regexp.MustCompile(`\$0x([0-9A-F]{2})`)
	n := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(src), "\n") {
			m := def.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			var code []byte
			for _, h := range hex.FindAllStringSubmatch(m[2], -1) {
				v, _ := strconv.ParseUint(h[1], 16, 8)
				code = append(code, byte(v))
			}
			bin := filepath.Join(t.TempDir(), "insn.bin")
			if err := os.WriteFile(bin, code, 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(objdump, "-D", "-b", "binary", "-mi386:x86-64", bin).CombinedOutput()
			if err != nil {
				t.Fatalf("objdump: %v\n%s", err, out)
			}
			var got string
			for _, l := range strings.Split(string(out), "\n") {
				if parts := strings.Split(l, "\t"); len(parts) >= 3 && strings.HasPrefix(strings.TrimSpace(parts[0]), "0:") {
					got = strings.Join(strings.Fields(parts[2]), " ")
				}
			}
			want := strings.Join(strings.Fields(m[3]), " ")
			// objdump writes disp(%base,%index,1) as 0x..(...); the comments do too.
			if got != want {
				t.Errorf("%s %s: %s disassembles as %q, comment says %q", f, m[1], m[2], got, want)
			}
			n++
		}
	}
	if n == 0 {
		t.Fatalf("no byte-encoded instructions found in %s", glob)
	}
	return n
}

// TestAMXInstructions checks each tile instruction the kernels use against
// a scalar model of its definition (Intel SDM), on values that exercise
// the signs (an emulator that multiplies signed bytes as unsigned fails
// here, not only in a kernel test) and, for TDPBF16PS, small integers whose
// sums are exact in any order.
func TestAMXInstructions(t *testing.T) {
	if !hasLevel("amx") {
		amxSkip(t)
	}
	cfg := tileCfg{palette: 1}
	for i := 0; i < 3; i++ {
		cfg.rows[i], cfg.colsb[i] = 16, 64
	}
	r := rand.New(rand.NewPCG(49, 50))
	var a, b [16 * 64]byte
	for i := range a {
		a[i], b[i] = byte(r.Uint32()), byte(r.Uint32())
	}
	c0 := make([]int32, 256)
	for i := range c0 {
		c0[i] = int32(r.Uint32()>>8) - 1<<23
	}
	s8 := func(x byte) int32 { return int32(int8(x)) }
	u8 := func(x byte) int32 { return int32(x) }
	for op, c := range []struct {
		name string
		ea   func(byte) int32
		eb   func(byte) int32
	}{{"tdpbssd", s8, s8}, {"tdpbsud", s8, u8}, {"tdpbusd", u8, s8}, {"tdpbuud", u8, u8}} {
		got := append([]int32(nil), c0...)
		amxOne(op, &got[0], &a[0], &b[0], &cfg)
		for m := 0; m < 16; m++ {
			for n := 0; n < 16; n++ {
				want := c0[16*m+n]
				for k := 0; k < 16; k++ {
					for j := 0; j < 4; j++ {
						want += c.ea(a[64*m+4*k+j]) * c.eb(b[64*k+4*n+j])
					}
				}
				if got[16*m+n] != want {
					t.Fatalf("%s: C[%d][%d] = %d, want %d (the instruction itself, not a kernel)", c.name, m, n, got[16*m+n], want)
				}
			}
		}
	}
	// TDPBF16PS: C (f32) += sum over pairs of bf16 products.
	var af, bf [16 * 64]byte
	bf16 := func(dst []byte, v float32) {
		h := quant.FP32ToBF16(v)
		dst[0], dst[1] = byte(h), byte(h>>8)
	}
	val := func(x []byte) float32 { return quant.BF16ToFP32(uint16(x[0]) | uint16(x[1])<<8) }
	for i := 0; i < 16*32; i++ {
		bf16(af[2*i:], float32(r.IntN(33)-16))
		bf16(bf[2*i:], float32(r.IntN(33)-16))
	}
	cf := make([]float32, 256)
	for i := range cf {
		cf[i] = float32(r.IntN(2001) - 1000)
	}
	got := append([]float32(nil), cf...)
	amxOne(4, (*int32)(unsafe.Pointer(&got[0])), &af[0], &bf[0], &cfg)
	for m := 0; m < 16; m++ {
		for n := 0; n < 16; n++ {
			want := cf[16*m+n]
			for k := 0; k < 16; k++ {
				for j := 0; j < 2; j++ {
					want += val(af[64*m+4*k+2*j:]) * val(bf[64*k+4*n+2*j:])
				}
			}
			if got[16*m+n] != want {
				t.Fatalf("tdpbf16ps: C[%d][%d] = %v, want %v (the instruction itself, not a kernel)", m, n, got[16*m+n], want)
			}
		}
	}
}

// TestEmulatedX86 runs the kernel tests under an x86 emulator, for the
// levels whose instructions this CPU lacks (AMX, AVX-512, AVX-VNNI):
// DROIDGO_X86_EMULATOR names the runner, a command that is given the static
// test binary and its arguments (for example a script that boots a kernel
// with the binary in its initramfs on an emulated CPU) and passes the
// DROIDGO_* variables on to it. DROIDGO_X86_EMULATOR_ISA (default amx)
// names the level the emulated CPU must offer: the run requires it
// (DROIDGO_REQUIRE_ISA), so a missing feature fails rather than skips, and
// runs the tests at that level only (DROIDGO_TEST_ONE_LEVEL), chosen by
// DROIDGO_ISA, or, with DROIDGO_X86_EMULATOR_BEST=1, by start-up itself as
// the best level of the emulated CPU (TestISAMatches checks either).
// DROIDGO_X86_EMULATOR_RUN, when set, replaces the pattern of the tests run
// (a slow emulator may only afford the level's own kernels' tests). Without
// a runner the test skips with a message.
func TestEmulatedX86(t *testing.T) {
	runner := os.Getenv("DROIDGO_X86_EMULATOR")
	if runner == "" {
		t.Skip("DROIDGO_X86_EMULATOR not set: no emulated run (AMX/AVX-512/AVX-VNNI kernels are tested natively only where the CPU has them)")
	}
	if testing.Short() {
		t.Skip("emulated runs are slow; skipped in -short mode")
	}
	isa := os.Getenv("DROIDGO_X86_EMULATOR_ISA")
	if isa == "" {
		isa = "amx"
	}
	bin := filepath.Join(t.TempDir(), "kernels.test")
	build := exec.Command("go", "test", "-c", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the test binary: %v\n%s", err, out)
	}
	forced := isa
	if os.Getenv("DROIDGO_X86_EMULATOR_BEST") == "1" {
		forced = ""
	}
	env := []string{"DROIDGO_REQUIRE_ISA=" + isa, "DROIDGO_WANT_ISA=" + isa, "DROIDGO_ISA=" + forced,
		"DROIDGO_TEST_ONE_LEVEL=1", "DROIDGO_X86_EMULATOR="}
	run := os.Getenv("DROIDGO_X86_EMULATOR_RUN")
	if run == "" {
		run = "^Test(AMX|AVXVNNI|Gemm|MatMul|MatVec|Attn|Levels|Repack|BatchInvariant|RequiredISA|ISAMatches|QuantizeQ8_0|DotAxpy)"
	}
	cmd := exec.Command("sh", "-c", runner+` "$@"`, "runner", bin, "-test.run", run, "-test.v", "-test.short")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("tests under %q: %v\n%s", runner, err, out)
	}
	pass := strings.Count(string(out), "--- PASS")
	if pass == 0 || !strings.Contains(string(out), "--- PASS: TestMatVecX8/"+isa) {
		t.Fatalf("tests under %q ran no %s-level test:\n%s", runner, isa, out)
	}
	t.Logf("under %q: %d tests and subtests passed, %s level included", runner, pass, isa)
}

// BenchmarkAMXPeak measures the tile unit's own rate on this machine, one
// thread: TDPBSSD (16x16x64 int8 MACs) and TDPBF16PS (16x16x32 bf16 MACs)
// on register-resident tiles, so PERFORMANCE.md can state each kernel's
// share of the peak.
func BenchmarkAMXPeak(b *testing.B) {
	if !hasLevel("amx") {
		b.Skip("no amx level")
	}
	cfg := tileCfg{palette: 1}
	for i := 0; i < 6; i++ {
		cfg.rows[i], cfg.colsb[i] = 16, 64
	}
	const n = 1 << 16
	for _, c := range []struct {
		name string
		bf16 bool
		macs float64
	}{{"TDPBSSD", false, 16 * 16 * 64}, {"TDPBF16PS", true, 16 * 16 * 32}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				amxPeak(n, c.bf16, &cfg)
			}
			b.ReportMetric(4*n*c.macs*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
		})
	}
}

// BenchmarkAMXMix runs the loops of asmgen/gen_amxmix.py, one thread, on
// zeroed and on random data, in ns per round: which of the tile unit's
// and the vector unit's work overlap on this core (a case that costs the
// sum of its parts' rounds does not overlap), and how the K-quant kernels'
// own pattern compares with the peak's. docs/PERFORMANCE.md reads it.
func BenchmarkAMXMix(b *testing.B) {
	if !hasLevel("amx") {
		b.Skip("no amx level")
	}
	cfg := tileCfg{palette: 1}
	for i := range 8 {
		cfg.rows[i], cfg.colsb[i] = 16, 64
	}
	var mem []byte
	buf := align64(&mem, 24<<10)
	const n = 1 << 12
	for _, data := range []string{"zero", "random"} {
		if data == "random" {
			r := rand.New(rand.NewPCG(47, 48))
			for i := range buf {
				buf[i] = byte(r.Uint32())
			}
		}
		for _, m := range amxMixes {
			b.Run(data+"/"+m.name, func(b *testing.B) {
				for b.Loop() {
					m.run(n, &buf[0], &cfg)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/round")
			})
		}
	}
}
