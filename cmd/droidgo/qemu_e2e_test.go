package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/droidgo/droidgo/config"
	"github.com/droidgo/droidgo/loop"
	"github.com/droidgo/droidgo/model/local/localtest"
	"github.com/droidgo/droidgo/model/spark"
)

// TestQEMUArm64Agent cross-compiles droidgo for linux/arm64 (the binary a
// phone would run) and runs the agent on the simulator under
// qemu-aarch64-static on an i8mm CPU with 128-bit SVE: once with a script
// (which must solve the task) and once with a tiny random Q4_K_M model with
// Spark's vocabulary, whose prefill goes through the i8mm matrix-matrix
// kernels (its rows are multiples of 256, its prompts longer than 16
// tokens). The random model's decisions are garbage, but every step must
// end in a parsed call. It skips without qemu unless DROIDGO_REQUIRE_QEMU=1.
func TestQEMUArm64Agent(t *testing.T) {
	if runtime.GOARCH == "arm64" {
		t.Skip("already running on arm64")
	}
	if testing.Short() {
		t.Skip("cross-compiling and emulating droidgo is slow; skipped in -short mode")
	}
	qemu, err := exec.LookPath("qemu-aarch64-static")
	if err != nil {
		if os.Getenv("DROIDGO_REQUIRE_QEMU") == "1" {
			t.Fatal("DROIDGO_REQUIRE_QEMU=1 but qemu-aarch64-static is not installed (apt-get install qemu-user-static)")
		}
		t.Skip("qemu-aarch64-static not installed: droidgo on arm64 NOT tested (set DROIDGO_REQUIRE_QEMU=1 to make this fail)")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "droidgo-arm64")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "GOARCH=arm64", "GOOS=linux", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("cross-compile droidgo for arm64: %v\n%s", err, out)
	}
	c, _ := spark.Preset("q")
	// One layer and two steps keep the emulated run to seconds: the
	// agent's first prompt is about 2000 tokens.
	c.Context, c.Window = 16384, 8192
	c.Layers, c.Sliding = 1, c.Sliding[:1]
	modelPath := filepath.Join(dir, "spark-q-q4_k_m.gguf")
	if err := localtest.WriteType(modelPath, c, 3, "", "q4_k_m"); err != nil {
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
		// prints it: the run below must use i8mm.
		code, _, errs := run(t, "model", "bench", modelPath, "-p", "32", "-n", "1", "-r", "1")
		if code != 0 || !strings.Contains(errs, "kernels i8mm") {
			t.Fatalf("model bench: exit %d, want kernels i8mm in:\n%s", code, errs)
		}
		code, out, errs := run(t, "run", "Turn on Wi-Fi", "--sim", "wifi", "--model", modelPath, "--json", "--max-steps", "2", "--no-think")
		if code != 0 && code != 1 { // 1: the garbage call did not solve the task
			t.Fatalf("exit %d\nstderr:\n%s", code, errs)
		}
		var started, finished bool
		var stats, calls int
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var ev loop.Event
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("bad JSON line %q: %v\nstderr:\n%s", line, err, errs)
			}
			switch ev.Type {
			case loop.EvRunStarted:
				started = true
			case loop.EvModelStats:
				stats++
				if stats == 1 && ev.Stats.PromptTokens < 16 {
					t.Errorf("step %d prompt of %d tokens: too short for the matrix-matrix kernels", ev.Step, ev.Stats.PromptTokens)
				}
			case loop.EvToolCall:
				if ev.Call == nil {
					t.Errorf("step %d: no usable call: %+v", ev.Step, ev.Parse)
				}
				calls++
			case loop.EvFinished:
				finished = true
			}
		}
		if !started || !finished || stats == 0 || calls != stats {
			t.Fatalf("events: started %v, finished %v, %d model turns, %d calls\nstdout:\n%s\nstderr:\n%s", started, finished, stats, calls, out, errs)
		}
	})
}
