package main

// End-to-end tests of the ADB commands: the real adb server (private port)
// connected to the fake adbd serving simulator scenarios, driven through
// execute() exactly as a person would from a shell.

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/droidgo/droidgo/device"
	"github.com/droidgo/droidgo/recording"

	"github.com/droidgo/droidgo/simulator"
	"github.com/droidgo/droidgo/simulator/adbd"
	"github.com/droidgo/droidgo/simulator/adbd/adbtest"
)

type adbRig struct {
	srv    *adbtest.Server
	fake   *adbd.Server
	phone  *simulator.Phone
	serial string
}

// newADBRig serves scenario over the fake adbd, starts a private adb server
// and points the environment (ANDROID_ADB_SERVER_PORT) at it. With
// connect, the server is connected to the phone.
func newADBRig(t *testing.T, scenario string, opts adbd.Options, connect bool) *adbRig {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("ANDROID_SERIAL", "")
	t.Setenv("ADB_SERVER_SOCKET", "")
	srv := adbtest.StartServer(t)
	t.Setenv("ANDROID_ADB_SERVER_PORT", strconv.Itoa(srv.Port))
	phone, err := simulator.Load(scenario)
	if err != nil {
		t.Fatal(err)
	}
	fake := adbtest.StartDevice(t, phone, opts)
	r := &adbRig{srv: srv, fake: fake, phone: phone, serial: fake.Addr()}
	if connect {
		adbtest.Connect(t, srv, fake)
	}
	return r
}

func cli(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return cliWith(t, nil, args...)
}

// cliWith runs droidgo with the real dependencies, changed by setup.
func cliWith(t *testing.T, setup func(*deps), args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	d := newDeps(ctx, strings.NewReader(""), &out, &errb)
	if setup != nil {
		setup(d)
	}
	code := executeWith(d, args)
	return code, out.String(), errb.String()
}

func TestCLIDevicesConnect(t *testing.T) {
	r := newADBRig(t, "wifi", adbd.Options{Model: "Pixel_Sim"}, false)
	code, out, errs := cli(t, "devices", "--json")
	if code != 0 || strings.TrimSpace(out) != "[]" {
		t.Fatalf("devices --json before connect = %d %q %q, want []", code, out, errs)
	}
	code, out, errs = cli(t, "connect", r.serial)
	if code != 0 || !strings.Contains(out, "connected to "+r.serial+" (Pixel_Sim)") {
		t.Fatalf("connect = %d %q %q", code, out, errs)
	}
	code, out, errs = cli(t, "devices", "--json")
	if code != 0 {
		t.Fatalf("devices --json = %d %q", code, errs)
	}
	var devs []map[string]string
	if err := json.Unmarshal([]byte(out), &devs); err != nil {
		t.Fatalf("devices --json output %q: %v", out, err)
	}
	if len(devs) != 1 || devs[0]["serial"] != r.serial || devs[0]["state"] != "device" || devs[0]["model"] != "Pixel_Sim" || devs[0]["transport_id"] == "" {
		t.Errorf("devices --json = %v", devs)
	}
	keys := make([]string, 0)
	for k := range devs[0] {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"device", "model", "product", "serial", "state", "transport_id"}; !slices.Equal(keys, want) {
		t.Errorf("devices --json keys %v, want %v", keys, want)
	}
	code, out, _ = cli(t, "devices")
	if code != 0 || !strings.Contains(out, r.serial) || !strings.Contains(out, "SERIAL") {
		t.Errorf("devices = %d %q", code, out)
	}
	if code, _, errs := cli(t, "connect", "nonsense"); code != 2 || !strings.Contains(errs, "HOST:PORT") {
		t.Errorf("connect nonsense = %d %q, want usage error", code, errs)
	}
	closed := "127.0.0.1:" + strconv.Itoa(adbtest.FreePort(t))
	if code, _, errs := cli(t, "connect", closed); code != 1 || !strings.Contains(errs, closed) {
		t.Errorf("connect to a closed port = %d %q", code, errs)
	}
}

func TestCLIDo(t *testing.T) {
	r := newADBRig(t, "wifi", adbd.Options{}, true)
	steps := []struct {
		args []string
		out  string
	}{
		{[]string{"do", "open", "Settings"}, "opened Settings"},
		{[]string{"do", "--device", r.serial, "key", "back"}, "pressed back"},
		{[]string{"do", "-s", r.serial, "open", "com.android.settings"}, "opened com.android.settings"},
		{[]string{"do", "tap", "0"}, "tap element 0"},
		{[]string{"do", "swipe", "up"}, "swiped up across the screen"},
		{[]string{"do", "type", `"; reboot; echo "`}, "typed"},
		{[]string{"do", "press_key", "home"}, "pressed home"},
		{[]string{"do", "open_app", "Settings"}, "opened Settings"},
		{[]string{"do", "type_text", "wifi", "0"}, "and typed \"wifi\""},
	}
	for _, s := range steps {
		code, out, errs := cli(t, s.args...)
		if code != 0 || !strings.Contains(out, s.out) {
			t.Errorf("%v = %d %q %q, want %q", s.args, code, out, errs, s.out)
		}
	}
	bad := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"do", "tap", "x"}, 2, "index must be an integer"},
		{[]string{"do", "tap", "9999"}, 1, "index 9999 is not on the screen; valid indices are 0-"},
		{[]string{"do", "key", "reboot"}, 2, `key "reboot" is not valid`},
		{[]string{"do", "press_key", "reboot"}, 2, `key "reboot" is not valid`},
		{[]string{"do", "swipe", "sideways"}, 2, "direction"},
		{[]string{"do", "fly"}, 2, "unknown action"},
		{[]string{"do", "type", "a", "b"}, 2, "usage"},
		{[]string{"do", "tap", "1", "2"}, 2, "usage"},
		{[]string{"do", "open", "Clok"}, 1, "Clock"},
		{[]string{"do", "type", "héllo"}, 1, "ADB Keyboard"},
		{[]string{"do", "--device", "emulator-1", "key", "back"}, 1, "not found"},
	}
	for _, b := range bad {
		code, _, errs := cli(t, b.args...)
		if code != b.code || !strings.Contains(errs, b.msg) {
			t.Errorf("%v = %d %q, want %d and %q", b.args, code, errs, b.code, b.msg)
		}
	}
	for _, c := range r.fake.Commands() {
		if c.Rejected != "" {
			t.Errorf("device shell refused %q: %s", c.Line, c.Rejected)
		}
	}
}

func TestCLIScreenDevice(t *testing.T) {
	r := newADBRig(t, "wifi", adbd.Options{}, true)
	code, out, errs := cli(t, "screen", "--device", r.serial)
	if code != 0 || !strings.Contains(out, "Settings") {
		t.Fatalf("screen --device = %d %q %q", code, out, errs)
	}
}

func TestCLIServerNotRunning(t *testing.T) {
	port := adbtest.FreePort(t)
	t.Setenv("ANDROID_ADB_SERVER_PORT", strconv.Itoa(port))
	t.Setenv("ADB_SERVER_SOCKET", "")
	t.Setenv("PATH", t.TempDir()) // no adb to start one with
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	code, _, errs := cli(t, "devices")
	if code != 1 || !strings.Contains(errs, "adb server is not running at 127.0.0.1:"+strconv.Itoa(port)) || !strings.Contains(errs, "apt-get install adb") {
		t.Errorf("devices without a server = %d %q", code, errs)
	}
	// droidgo run on a phone behind a server that is not there: the same
	// one-sentence error, exit 1, and the recording says how the run ended.
	rec := filepath.Join(t.TempDir(), "run.jsonl")
	code, out, errs := cli(t, "run", "Turn on Wi-Fi", "--device", "127.0.0.1:5", "--model", wifiScript(t), "--no-tui", "--record", rec)
	if code != 1 || !strings.Contains(out+errs, "adb server is not running at 127.0.0.1:"+strconv.Itoa(port)) {
		t.Errorf("run --device without a server = %d %q %q", code, out, errs)
	}
	got, err := recording.Open(rec)
	if err != nil {
		t.Fatalf("no recording kept: %v", err)
	}
	if res := got.Result(); res == nil || res.Success || !strings.Contains(res.Reason, "adb server is not running") {
		t.Errorf("recorded result %+v", res)
	}
	t.Setenv("ANDROID_ADB_SERVER_PORT", "notaport")
	if code, _, errs := cli(t, "devices"); code != 2 || !strings.Contains(errs, "ANDROID_ADB_SERVER_PORT") {
		t.Errorf("devices with a bad port = %d %q", code, errs)
	}
}

func TestCLISimServe(t *testing.T) {
	adbtest.ADB(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := ioPipe()
	var errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- execute(ctx, []string{"sim", "serve", "--scenario", "wifi", "--port", "0", "--log"}, strings.NewReader(""), pw, &errb)
	}()
	line := pr.waitFor(t, "adb connect 127.0.0.1:")
	addr := strings.TrimSpace(line[strings.Index(line, "127.0.0.1:"):])
	srv := adbtest.StartServer(t)
	out, err := srv.Run(ctx, "connect", addr)
	if err != nil || !strings.Contains(out, "connected") {
		t.Fatalf("adb connect %s: %v %s", addr, err, out)
	}
	for i := 0; i < 100; i++ {
		if out, _ := srv.Run(ctx, "-s", addr, "get-state"); strings.TrimSpace(out) == "device" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	out, err = srv.Run(ctx, "-s", addr, "shell", "wm", "size")
	if err != nil || !strings.Contains(out, "Physical size:") {
		t.Errorf("adb shell wm size = %v %q", err, out)
	}
	dir := t.TempDir()
	if out, err := srv.Run(ctx, "-s", addr, "shell", "uiautomator", "dump"); err != nil || !strings.Contains(out, "dumped to: /sdcard/window_dump.xml") {
		t.Errorf("adb shell uiautomator dump = %v %q", err, out)
	}
	if out, err := srv.Run(ctx, "-s", addr, "pull", "/sdcard/window_dump.xml", dir); err != nil {
		t.Errorf("adb pull = %v %q", err, out)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "window_dump.xml")); err != nil || !bytes.Contains(b, []byte("<hierarchy")) {
		t.Errorf("pulled dump = %v %.80q", err, b)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("sim serve exit %d: %s", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("sim serve did not stop on cancel")
	}
	if log := pr.String(); !strings.Contains(log, "uiautomator dump") {
		t.Errorf("--log output lacks the commands: %q", log)
	}
}

// syncBuf is an io.Writer tests can watch while a command runs.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func ioPipe() (*syncBuf, *syncBuf) { b := &syncBuf{}; return b, b }

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuf) waitFor(t *testing.T, sub string) string {
	t.Helper()
	for i := 0; i < 200; i++ {
		for _, l := range strings.Split(s.String(), "\n") {
			if strings.Contains(l, sub) {
				return l
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("output never showed %q: %q", sub, s.String())
	return ""
}

func scriptModel(t *testing.T, name string) string {
	p, err := filepath.Abs("../../fixtures/scripts/" + name + ".txt")
	if err != nil {
		t.Fatal(err)
	}
	return "script:" + p + "?pace=0"
}

func wifiScript(t *testing.T) string { return scriptModel(t, "wifi") }

// TestCLIRunOverADB is the whole chain: droidgo run on each scenario served
// by the fake adbd behind the real adb server, with its scripted model.
func TestCLIRunOverADB(t *testing.T) {
	infos, err := simulator.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range infos {
		if _, err := os.Stat("../../fixtures/scripts/" + info.Name + ".txt"); err != nil {
			continue
		}
		t.Run(info.Name, func(t *testing.T) {
			r := newADBRig(t, info.Name, adbd.Options{}, true)
			rec := filepath.Join(t.TempDir(), "run.jsonl")
			code, out, errs := cli(t, "run", info.Task, "--device", r.serial, "--model", scriptModel(t, info.Name), "--no-tui", "--record", rec, "--poll", "20ms")
			if code != 0 {
				t.Fatalf("run over ADB = %d\nstdout: %s\nstderr: %s", code, out, errs)
			}
			if !r.phone.Success() {
				t.Errorf("the scenario's success check does not hold; phone actions: %q", r.phone.Actions())
			}
			if fi, err := os.Stat(rec); err != nil || fi.Size() == 0 {
				t.Errorf("recording %s: %v", rec, err)
			}
			actions := 0
			for _, c := range r.fake.Commands() {
				if c.Rejected != "" {
					t.Errorf("device shell refused %q: %s", c.Line, c.Rejected)
				}
				if len(c.Argv) > 0 && (c.Argv[0] == "input" || c.Argv[0] == "monkey") {
					actions++
				}
			}
			if n := len(r.phone.Actions()); actions == 0 || n == 0 {
				t.Errorf("%d input/monkey commands, %d phone actions", actions, n)
			}
		})
	}
}

// TestCLIRunFailures: a dump that keeps failing, and a phone unplugged mid
// run, each end with a clear error and the recording kept.
func TestCLIRunFailures(t *testing.T) {
	t.Run("dump fails", func(t *testing.T) {
		r := newADBRig(t, "wifi", adbd.Options{}, true)
		r.phone.FailNextDumps(1 << 20)
		shortRetries := func(d *deps) {
			d.openADB = func(ctx context.Context, serial string) (device.Device, string, error) {
				return openADBDevice(ctx, d.adbClient, serial, 10*time.Millisecond)
			}
		}
		rec := filepath.Join(t.TempDir(), "run.jsonl")
		code, out, errs := cliWith(t, shortRetries, "run", "Turn on Wi-Fi", "--device", r.serial, "--model", wifiScript(t), "--no-tui", "--record", rec, "--poll", "20ms")
		if code != 1 || !strings.Contains(out+errs, "could not get idle state on "+r.serial) {
			t.Errorf("run with failing dumps = %d %q\nstdout: %s", code, errs, out)
		}
		if fi, err := os.Stat(rec); err != nil || fi.Size() == 0 {
			t.Errorf("recording after failure: %v", err)
		}
	})
	t.Run("device disappears", func(t *testing.T) {
		var once sync.Once
		var fake *adbd.Server
		var mu sync.Mutex
		taps := 0
		opts := adbd.Options{OnCommand: func(c adbd.Command) {
			if len(c.Argv) > 1 && c.Argv[0] == "input" && c.Argv[1] == "tap" {
				mu.Lock()
				taps++
				n := taps
				mu.Unlock()
				if n == 1 {
					once.Do(func() { go fake.Close() })
				}
			}
		}}
		r := newADBRig(t, "wifi", opts, false)
		fake = r.fake
		adbtest.Connect(t, r.srv, r.fake)
		rec := filepath.Join(t.TempDir(), "run.jsonl")
		code, out, errs := cli(t, "run", "Turn on Wi-Fi", "--device", r.serial, "--model", wifiScript(t), "--no-tui", "--record", rec, "--poll", "20ms")
		if code != 1 || !strings.Contains(out+errs, "device "+r.serial+" is gone") || strings.Contains(out+errs, "tap: tap:") {
			t.Errorf("run with the phone unplugged = %d %q\nstdout: %s", code, errs, out)
		}
		if fi, err := os.Stat(rec); err != nil || fi.Size() == 0 {
			t.Errorf("recording after unplug: %v", err)
		}
	})
}
