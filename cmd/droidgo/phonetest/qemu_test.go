package phonetest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/droidgo/droidgo/config"
	"github.com/droidgo/droidgo/model/local/localtest"
	"github.com/droidgo/droidgo/model/spark"
)

// TestQEMUArm64Agent cross-compiles droidgo for linux/arm64 (the binary a
// phone would run) and runs it under qemu-aarch64-static on an i8mm CPU
// with 128-bit SVE: the agent on the simulator with a script (which must
// solve the task), and model bench on a tiny random Q4_K_M model with
// Spark's vocabulary, which must pick the i8mm kernels. The same model
// runs the agent on arm64 in TestLocalDeviceQEMU (through the local
// device), whose events must equal the host's. It skips without qemu
// unless DROIDGO_REQUIRE_QEMU=1.
func TestQEMUArm64Agent(t *testing.T) {
	qemu := needQEMU(t)
	if qemu == "" {
		t.Skip("already running on arm64")
	}
	bin := buildDroidgo(t, "linux", "arm64")
	dir := t.TempDir()
	modelPath := filepath.Join(dir, "spark-q-q4_k_m.gguf")
	if err := writeArm64Model(modelPath); err != nil {
		t.Fatal(err)
	}
	emptyConfig := filepath.Join(dir, "empty.toml")
	if err := os.WriteFile(emptyConfig, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, args ...string) (int, string, string) {
		t.Helper()
		cmd := exec.Command(qemu, append([]string{"-cpu", "max,sve-default-vector-length=16", bin}, args...)...)
		// As hermetic: no setting of the developer's reaches the child.
		env := append(os.Environ(), "DROIDGO_CONFIG="+emptyConfig, "DROIDGO_CACHE="+dir, "XDG_CACHE_HOME="+dir, "DROIDGO_ISA=")
		for _, k := range config.Keys {
			env = append(env, k.Env+"=")
		}
		cmd.Env = env
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if err != nil {
			ee, ok := err.(*exec.ExitError)
			if !ok {
				t.Fatalf("run droidgo under qemu: %v", err)
			}
			code = ee.ExitCode()
		}
		return code, out.String(), errb.String()
	}

	t.Run("script", func(t *testing.T) {
		code, out, errs := run(t, "run", "Turn on Wi-Fi", "--sim", "wifi", "--model", scriptFor("wifi", "1ms"), "--no-tui")
		if code != 0 || !strings.Contains(out, "result:   SUCCESS: task_complete") {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
		}
	})
	t.Run("random-q4_k_m", func(t *testing.T) {
		// The kernels level is read off model bench, the one command that
		// prints it.
		code, _, errs := run(t, "model", "bench", modelPath, "-p", "32", "-n", "1", "-r", "1")
		if code != 0 || !strings.Contains(errs, "kernels i8mm") {
			t.Fatalf("model bench: exit %d, want kernels i8mm in:\n%s", code, errs)
		}
	})
}

// writeArm64Model writes the random model the arm64 tests run: Spark's
// vocabulary (so the agent's prompt is about 2000 tokens, as with Spark)
// in one layer of the "q" shape, Q4_K_M, whose rows are multiples of 256
// so prefill goes through the i8mm matrix-matrix kernels. One layer keeps
// an emulated agent step to about a minute of CPU (the 8-layer "tiny"
// preset, whose byte-sized vocabulary makes a 3300-token prompt, took 14
// minutes of prefill under qemu on the loaded 2-core host).
func writeArm64Model(path string) error {
	c, _ := spark.Preset("q")
	c.Context, c.Window = 16384, 8192
	c.Layers, c.Sliding = 1, c.Sliding[:1]
	return localtest.WriteType(path, c, 3, "", "q4_k_m")
}
