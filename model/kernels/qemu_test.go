package kernels

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestQEMUArm64 cross-compiles this package's tests for arm64 and runs them
// under qemu-user once per arm64 level, on a CPU model whose best level it is:
// -cpu max with 128-bit SVE like a phone core (i8mm), cortex-a76 (dotprod, no
// i8mm) and cortex-a53 (neon), each asserting the level start-up chose and
// running the kernel tests at that level only, so CI on x86 proves the NEON,
// SDOT and SMMLA kernels and the dispatch fallbacks. It skips when qemu-aarch64-static is missing unless
// DROIDGO_REQUIRE_QEMU=1, when it fails instead.
func TestQEMUArm64(t *testing.T) {
	if runtime.GOARCH == "arm64" {
		t.Skip("already running on arm64")
	}
	if testing.Short() {
		t.Skip("cross-compiling and emulating the arm64 tests is slow; skipped in -short mode")
	}
	qemu, err := exec.LookPath("qemu-aarch64-static")
	if err != nil {
		if os.Getenv("DROIDGO_REQUIRE_QEMU") == "1" {
			t.Fatal("DROIDGO_REQUIRE_QEMU=1 but qemu-aarch64-static is not installed (apt-get install qemu-user-static)")
		}
		t.Skip("qemu-aarch64-static not installed: arm64 kernels NOT tested (set DROIDGO_REQUIRE_QEMU=1 to make this fail)")
	}
	bin := filepath.Join(t.TempDir(), "kernels-arm64.test")
	build := exec.Command("go", "test", "-c", "-o", bin, ".")
	build.Env = append(os.Environ(), "GOARCH=arm64", "GOOS=linux", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("cross-compile arm64 tests: %v\n%s", err, out)
	}
	for _, c := range []struct{ cpu, env, wantISA, wantBF16 string }{
		{"max,sve-default-vector-length=16", "", "i8mm", "1"},
		{"cortex-a76", "", "dotprod", "0"},
		{"cortex-a53", "", "neon", "0"},
	} {
		t.Run(c.cpu+"/"+c.wantISA, func(t *testing.T) {
			// -test.short trims TestMatMulFloat's batch sizes and the Gemm
			// shapes: emulated floating point is slow.
			cmd := exec.Command(qemu, "-cpu", c.cpu, bin, "-test.run", qemuTests, "-test.short", "-test.v")
			cmd.Env = append(os.Environ(), "DROIDGO_WANT_ISA="+c.wantISA, "DROIDGO_WANT_BF16="+c.wantBF16, "DROIDGO_ISA="+c.env, "DROIDGO_TEST_ONE_LEVEL=1")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("arm64 tests under qemu -cpu %s: %v\n%s", c.cpu, err, out)
			}
			t.Logf("qemu -cpu %s: arm64 tests passed", c.cpu)
		})
	}
}

// qemuTests are the tests the emulated arm64 runs run.
const qemuTests = "^Test(MatVec|MatMul|Gemm|DotAxpy|Levels|ShortBuffers|ISAMatches|EnvOverride|BF16Detect|Quantize|BatchInvariant|GELU|RoundF16|EncodeF16|Repack)"

// TestISAMatches checks the level chosen at start-up when the caller says
// which one to expect (the qemu test does, per emulated CPU model), and
// EnvError: an *ISAError naming every level this CPU can run when
// DROIDGO_WANT_ISA_ERROR=1, else nil.
func TestISAMatches(t *testing.T) {
	want := os.Getenv("DROIDGO_WANT_ISA")
	if want == "" {
		t.Skip("DROIDGO_WANT_ISA not set")
	}
	if got := ISA(); got != want {
		t.Fatalf("ISA() = %q, want %q (levels %v)", got, want, Levels())
	}
	err := EnvError()
	if os.Getenv("DROIDGO_WANT_ISA_ERROR") != "1" {
		if err != nil {
			t.Fatalf("EnvError() = %v, want nil", err)
		}
		return
	}
	var ie *ISAError
	if !errors.As(err, &ie) {
		t.Fatalf("EnvError() = %v, want an *ISAError", err)
	}
	for _, l := range Levels() {
		if !strings.Contains(err.Error(), l) {
			t.Errorf("%q does not name level %s", err, l)
		}
	}
	t.Logf("DROIDGO_ISA=%s: %v", os.Getenv("DROIDGO_ISA"), err)
}

// TestEnvOverride re-runs this test binary with DROIDGO_ISA set to every
// available level, and to names this CPU has no level of (unknown ones and
// levels it lacks), and checks the level start-up picked and EnvError.
func TestEnvOverride(t *testing.T) {
	if os.Getenv("DROIDGO_WANT_ISA") != "" {
		t.Skip("already a child run")
	}
	best := Levels()[len(Levels())-1]
	type run struct{ isa, want, wantErr string }
	var runs []run
	for _, l := range Levels() {
		runs = append(runs, run{l, l, ""})
	}
	runs = append(runs, run{"", best, ""}, run{"no-such-level", best, "1"}, run{"AVX2", best, "1"})
	for _, m := range missingLevels() {
		runs = append(runs, run{m.name, best, "1"})
	}
	for _, r := range runs {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestISAMatches$", "-test.v")
		cmd.Env = append(os.Environ(), "DROIDGO_ISA="+r.isa, "DROIDGO_WANT_ISA="+r.want, "DROIDGO_WANT_ISA_ERROR="+r.wantErr)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("DROIDGO_ISA=%s: %v\n%s", r.isa, err, out)
		}
	}
}
