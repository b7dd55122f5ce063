package phonetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/droidgo/droidgo/config"
	"github.com/droidgo/droidgo/simulator"
	"github.com/droidgo/droidgo/simulator/adbd"
)

func TestMain(m *testing.M) {
	code := m.Run()
	builds.cleanup()
	os.Exit(code)
}

// hostDroidgo is droidgo built for this machine: the PC's droidgo, and
// the programs of the fake phones' userland (`droidgo sim userland`).
func hostDroidgo(t testing.TB) string { return buildDroidgo(t, runtime.GOOS, runtime.GOARCH) }

// fixtures is the repository's fixtures directory.
var fixtures = func() string {
	dir, _ := filepath.Abs("../../../fixtures")
	return dir
}()

// scriptFor is the --model value of scenario name's script at pace.
func scriptFor(name, pace string) string {
	return "script:" + filepath.Join(fixtures, "scripts", name+".txt") + "?pace=" + pace
}

// builds caches the cross-compiled droidgo of each target for the whole
// test process: linking one takes seconds to a minute on a loaded machine.
var builds buildCache

type buildCache struct {
	mu   sync.Mutex
	dir  string
	bins map[string]string
	errs map[string]error
}

func (b *buildCache) cleanup() {
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}

// buildDroidgo cross-compiles droidgo for goos/goarch once per test process
// and returns the binary.
func buildDroidgo(t testing.TB, goos, goarch string) string {
	t.Helper()
	builds.mu.Lock()
	defer builds.mu.Unlock()
	key := goos + "/" + goarch
	if bin, ok := builds.bins[key]; ok {
		return bin
	}
	if err := builds.errs[key]; err != nil {
		t.Fatal(err)
	}
	if builds.dir == "" {
		dir, err := os.MkdirTemp("", "droidgo-builds-")
		if err != nil {
			t.Fatal(err)
		}
		builds.dir, builds.bins, builds.errs = dir, map[string]string{}, map[string]error{}
	}
	bin := filepath.Join(builds.dir, "droidgo-"+goos+"-"+goarch)
	cmd := exec.Command("go", "build", "-o", bin, "..")
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		builds.errs[key] = fmt.Errorf("cross-compile droidgo for %s: %v\n%s", key, err, out)
		t.Fatal(builds.errs[key])
	}
	builds.bins[key] = bin
	return bin
}

// needQEMU returns qemu-aarch64-static, or skips (fails with
// DROIDGO_REQUIRE_QEMU=1) without it. On arm64 it returns "" (no emulator
// needed).
func needQEMU(t testing.TB) string {
	t.Helper()
	if runtime.GOARCH == "arm64" {
		return ""
	}
	if testing.Short() {
		t.Skip("emulating droidgo is slow; skipped in -short mode")
	}
	qemu, err := exec.LookPath("qemu-aarch64-static")
	if err != nil {
		if os.Getenv("DROIDGO_REQUIRE_QEMU") == "1" {
			t.Fatal("DROIDGO_REQUIRE_QEMU=1 but qemu-aarch64-static is not installed (apt-get install qemu-user-static)")
		}
		t.Skip("qemu-aarch64-static not installed: droidgo on arm64 NOT tested (set DROIDGO_REQUIRE_QEMU=1 to make this fail)")
	}
	return qemu
}

// fakePhone is a simulator scenario served to programs that run "on" it:
// a fake adbd (not listening unless a test starts it) and its fake
// Android userland in a temporary directory.
type fakePhone struct {
	phone *simulator.Phone
	srv   *adbd.Server
	land  *adbd.Userland
}

// newFakePhone serves scenario through a fake userland whose programs are
// this machine's droidgo (`droidgo sim userland`).
func newFakePhone(t testing.TB, scenario string, opts adbd.Options) *fakePhone {
	t.Helper()
	p, err := simulator.Load(scenario)
	if err != nil {
		t.Fatal(err)
	}
	srv := adbd.New(p, opts)
	// A short directory: unix socket paths are limited to 108 bytes.
	dir, err := os.MkdirTemp("", "dgphone")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	land, err := srv.StartUserland(dir, hostDroidgo(t), "sim", "userland")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { land.Close(); srv.Close() })
	return &fakePhone{phone: p, srv: srv, land: land}
}

// hermeticEnv is an environment in which no setting of the developer's
// reaches a droidgo child, with the fake phone's userland on PATH.
func (f *fakePhone) env(t testing.TB) []string {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.toml")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "PATH" || k == "ANDROID_SERIAL" || strings.HasPrefix(k, "DROIDGO_") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "DROIDGO_CONFIG="+empty, "DROIDGO_CACHE="+dir, "XDG_CACHE_HOME="+dir)
	for _, k := range config.Keys {
		env = append(env, k.Env+"=")
	}
	return append(env, f.land.Env()...)
}

// runProgram runs argv with env and returns its exit status and output.
func runProgram(t testing.TB, timeout time.Duration, env []string, argv ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok || ctx.Err() != nil {
			t.Fatalf("%s: %v (ctx %v)\nstdout:\n%s\nstderr:\n%s", strings.Join(argv, " "), err, ctx.Err(), out.String(), errb.String())
		}
		code = ee.ExitCode()
	}
	return code, out.String(), errb.String()
}

// timingKeys are the fields of JSON events that measure time, which two
// runs of the same steps never share, and how the model ran (threads,
// cores and kernels differ between the phone and the host).
var timingKeys = []string{"time", "engine", "prefill_ms", "decode_ms", "tokens_per_second", "seconds", "load_ms", "first_token_ms"}

// normalEvents parses JSON event lines and removes the timing fields.
func normalEvents(t testing.TB, out string) []map[string]any {
	t.Helper()
	var evs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("bad JSON event %q: %v", line, err)
		}
		dropTiming(ev)
		evs = append(evs, ev)
	}
	return evs
}

func dropTiming(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if slices.Contains(timingKeys, k) || strings.HasSuffix(k, "_ms") {
				delete(v, k)
				continue
			}
			dropTiming(x)
		}
	case []any:
		for _, x := range v {
			dropTiming(x)
		}
	}
}
