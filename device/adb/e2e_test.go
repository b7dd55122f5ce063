package adb_test

// End-to-end tests: the real adb server (Debian's adb 29, private port)
// connected to the fake adbd, driven through this package's client.

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/droidgo/droidgo/device"
	"github.com/droidgo/droidgo/device/adb"
	"github.com/droidgo/droidgo/simulator/adbd"
	"github.com/droidgo/droidgo/simulator/adbd/adbtest"
)

const screenXML = `<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation="0"><node index="0" text="Wi-Fi" resource-id="" class="android.widget.TextView" package="com.android.settings" content-desc="" checkable="false" checked="false" clickable="true" enabled="true" focusable="true" focused="false" scrollable="false" long-clickable="false" password="false" selected="false" bounds="[0,200][1080,400]" /></hierarchy>`

type rig struct {
	srv    *adbtest.Server
	fake   *adbd.Server
	phone  *adbtest.Phone
	client *adb.Client
	serial string
}

func newRig(t *testing.T, opts adbd.Options) *rig { return newBenchRig(t, opts) }

func newBenchRig(t testing.TB, opts adbd.Options) *rig {
	t.Helper()
	srv := adbtest.StartServer(t)
	phone := adbtest.NewPhone(screenXML)
	fake := adbtest.StartDevice(t, phone, opts)
	serial := adbtest.Connect(t, srv, fake)
	return &rig{srv: srv, fake: fake, phone: phone, serial: serial,
		client: &adb.Client{Addr: srv.Addr(), AutoStart: false}}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func (r *rig) open(t *testing.T) *adb.Device {
	t.Helper()
	d, err := adb.Open(ctxT(t), r.client, r.serial)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return d
}

func TestE2EVersionDevicesFeatures(t *testing.T) {
	r := newRig(t, adbd.Options{Product: "p1", Model: "M_1", Device: "d1"})
	ctx := ctxT(t)
	v, err := r.client.Version(ctx)
	if err != nil || v < 29 {
		t.Fatalf("Version = %d, %v; want >= 29", v, err)
	}
	devs, err := r.client.Devices(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 1 {
		t.Fatalf("Devices = %+v, want 1", devs)
	}
	got := devs[0]
	if got.Serial != r.serial || got.State != "device" || got.Product != "p1" || got.Model != "M_1" || got.Device != "d1" || got.TransportID == "" {
		t.Errorf("Devices()[0] = %+v", got)
	}
	feats, err := r.client.Features(ctx, r.serial)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range adbd.DefaultFeatures {
		if !slices.Contains(feats, f) {
			t.Errorf("features %v lack %s", feats, f)
		}
	}
	// Connecting again is harmless and says so.
	if msg, err := r.client.Connect(ctx, r.serial); err != nil || !strings.Contains(msg, "already connected") {
		t.Errorf("Connect again = %q, %v", msg, err)
	}
}

func TestE2EShell(t *testing.T) {
	r := newRig(t, adbd.Options{})
	ctx := ctxT(t)
	tests := []struct {
		cmd       string
		v2        bool
		stdout    string
		stderrHas string
		exit      int
	}{
		{"echo hello", true, "hello\n", "", 0},
		{"exit 3", true, "", "", 3},
		{"nosuchcmd --x", true, "", "nosuchcmd: inaccessible or not found", 127},
		{"cat /sdcard/missing", true, "", "No such file or directory", 1},
		{"echo a; reboot", true, "", "syntax refused", 2},
		{"echo hello", false, "hello\n", "", -1},
		// v1 merges stderr into stdout and has no exit status.
		{"nosuchcmd", false, "/system/bin/sh: nosuchcmd: inaccessible or not found\n", "", -1},
	}
	for _, tt := range tests {
		res, err := r.client.Shell(ctx, r.serial, tt.cmd, tt.v2)
		if err != nil {
			t.Errorf("Shell(%q, v2=%v): %v", tt.cmd, tt.v2, err)
			continue
		}
		if string(res.Stdout) != tt.stdout || res.Exit != tt.exit || !strings.Contains(string(res.Stderr), tt.stderrHas) || res.V2 != tt.v2 {
			t.Errorf("Shell(%q, v2=%v) = stdout %q stderr %q exit %d v2 %v; want %q, %q, %d", tt.cmd, tt.v2, res.Stdout, res.Stderr, res.Exit, res.V2, tt.stdout, tt.stderrHas, tt.exit)
		}
	}
}

func TestE2EShellV1Device(t *testing.T) {
	// A device without shell_v2: Open must fall back to v1 and still work.
	r := newRig(t, adbd.Options{Features: []string{"cmd"}})
	d := r.open(t)
	if d.ShellV2() {
		t.Fatal("ShellV2() = true for a device without shell_v2")
	}
	if err := d.Tap(ctxT(t), 5, 6); err != nil {
		t.Fatal(err)
	}
	if xml, err := d.Dump(ctxT(t)); err != nil || string(xml) != screenXML {
		t.Fatalf("Dump over v1 and STAT = %q, %v", xml, err)
	}
	cmds := r.fake.Commands()
	if len(cmds) == 0 || cmds[0].Service != "shell" {
		t.Errorf("commands %+v, want shell v1", cmds)
	}
}

func TestE2EExecBinarySafe(t *testing.T) {
	r := newRig(t, adbd.Options{})
	var blob []byte
	for i := 0; i < 3; i++ {
		for b := 0; b < 256; b++ {
			blob = append(blob, byte(b))
		}
	}
	blob = append(blob, "\r\n\n\r"...)
	r.fake.WriteFile("/data/local/tmp/blob.bin", blob)
	out, err := r.client.Exec(ctxT(t), r.serial, "cat /data/local/tmp/blob.bin")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, blob) {
		t.Errorf("exec cat returned %d bytes, differing from the %d written", len(out), len(blob))
	}
}

func TestE2EPull(t *testing.T) {
	r := newRig(t, adbd.Options{})
	ctx := ctxT(t)
	big := bytes.Repeat([]byte("0123456789abcdef"), 20000) // 320 KB: several DATA chunks and WRTEs
	r.fake.WriteFile("/sdcard/big.bin", big)
	for _, v2 := range []bool{true, false} {
		data, fi, err := r.client.Pull(ctx, r.serial, "/sdcard/big.bin", v2)
		if err != nil {
			t.Fatalf("Pull(statV2=%v): %v", v2, err)
		}
		if !bytes.Equal(data, big) || fi.Size != uint64(len(big)) || fi.Mode&0o170000 != 0o100000 {
			t.Errorf("Pull(statV2=%v) = %d bytes, %+v", v2, len(data), fi)
		}
		_, _, err = r.client.Pull(ctx, r.serial, "/sdcard/nope.xml", v2)
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Pull(missing, statV2=%v) = %v, want fs.ErrNotExist", v2, err)
		}
	}
}

func TestE2EDeviceActions(t *testing.T) {
	r := newRig(t, adbd.Options{})
	r.phone.W, r.phone.H = 720, 1600
	d := r.open(t)
	ctx := ctxT(t)
	steps := []struct {
		name string
		do   func() error
		want string
	}{
		{"tap", func() error { return d.Tap(ctx, 540, 300) }, "tap 540 300"},
		{"long press", func() error { return d.LongPress(ctx, 10, 20) }, "long_press 10 20"},
		{"swipe", func() error { return d.Swipe(ctx, 1, 2, 3, 4, 250*time.Millisecond) }, "swipe 1 2 3 4 250"},
		{"key", func() error { return d.Key(ctx, "back") }, "key back"},
		{"key enter", func() error { return d.Key(ctx, "enter") }, "key enter"},
		{"open label", func() error { return d.OpenApp(ctx, "Clock") }, "open com.google.android.deskclock"},
		{"open label case", func() error { return d.OpenApp(ctx, "  chrome ") }, "open com.android.chrome"},
		{"open package", func() error { return d.OpenApp(ctx, "com.android.settings") }, "open com.android.settings"},
	}
	for _, s := range steps {
		before := len(r.phone.Actions())
		if err := s.do(); err != nil {
			t.Errorf("%s: %v", s.name, err)
			continue
		}
		acts := r.phone.Actions()
		if len(acts) != before+1 || acts[before] != s.want {
			t.Errorf("%s: phone actions %q, want one more: %q", s.name, acts[before:], s.want)
		}
	}
	if w, h, err := d.Size(ctx); err != nil || w != 720 || h != 1600 {
		t.Errorf("Size = %d,%d,%v", w, h, err)
	}
	if app, err := d.CurrentApp(ctx); err != nil || app != "com.android.settings" {
		t.Errorf("CurrentApp = %q, %v", app, err)
	}
	before := len(r.phone.Actions())
	if err := d.Key(ctx, "reboot"); !errors.Is(err, device.ErrUnknownKey) {
		t.Errorf("Key(reboot) = %v, want ErrUnknownKey", err)
	}
	err := d.OpenApp(ctx, "Clok")
	if !errors.Is(err, device.ErrUnknownApp) || !strings.Contains(err.Error(), "Clock") {
		t.Errorf("OpenApp(Clok) = %v, want ErrUnknownApp naming Clock", err)
	}
	if err := d.OpenApp(ctx, "com.example.notthere"); !errors.Is(err, device.ErrUnknownApp) {
		t.Errorf("OpenApp(missing package) = %v, want ErrUnknownApp", err)
	}
	if err := d.OpenApp(ctx, "Settings; reboot"); !errors.Is(err, device.ErrUnknownApp) {
		t.Errorf("OpenApp(injection) = %v, want ErrUnknownApp", err)
	}
	if acts := r.phone.Actions(); len(acts) != before {
		t.Errorf("refused calls still acted: %q", acts[before:])
	}
	for _, c := range r.fake.Commands() {
		if c.Rejected != "" {
			t.Errorf("the device shell refused %q: %s", c.Line, c.Rejected)
		}
	}
}

func TestE2ESizeRotated(t *testing.T) {
	// A phone turned a quarter: wm size gives the natural portrait size, the
	// rotation comes from dumpsys input, and Size answers in landscape.
	r := newRig(t, adbd.Options{Rotation: 1})
	r.phone.W, r.phone.H = 2400, 1080
	d := r.open(t)
	w, h, err := d.Size(ctxT(t))
	if err != nil || w != 2400 || h != 1080 {
		t.Errorf("Size rotated = %d,%d,%v; want 2400,1080", w, h, err)
	}
	res, err := d.Run(ctxT(t), "wm", "size")
	if err != nil || !strings.Contains(string(res.Stdout), "1080x2400") {
		t.Errorf("wm size = %q, %v; want the natural 1080x2400", res.Stdout, err)
	}
}

func TestE2EDump(t *testing.T) {
	r := newRig(t, adbd.Options{})
	d := r.open(t)
	d.DumpRetryDelay = 10 * time.Millisecond
	ctx := ctxT(t)
	xml, err := d.Dump(ctx)
	if err != nil || string(xml) != screenXML {
		t.Fatalf("Dump = %q, %v", xml, err)
	}
	if d.LastDumpDuration() <= 0 {
		t.Error("LastDumpDuration not measured")
	}
	// One failure is retried.
	r.phone.FailNextDumps(1)
	if xml, err := d.Dump(ctx); err != nil || string(xml) != screenXML {
		t.Fatalf("Dump after one idle failure = %q, %v", xml, err)
	}
	// A screen that never goes idle ends with ErrDumpNotIdle.
	r.phone.FailNextDumps(100)
	_, err = d.Dump(ctx)
	if !errors.Is(err, device.ErrDumpNotIdle) {
		t.Fatalf("Dump on a busy screen = %v, want ErrDumpNotIdle", err)
	}
	if !strings.Contains(err.Error(), "3 attempts") {
		t.Errorf("error %q does not say how often it tried", err)
	}
	n := 0
	for _, c := range r.fake.Commands() {
		if len(c.Argv) > 1 && c.Argv[0] == "uiautomator" {
			n++
		}
	}
	if n != 1+2+3 {
		t.Errorf("uiautomator ran %d times, want 6", n)
	}
}

func TestE2EDeviceDisappears(t *testing.T) {
	r := newRig(t, adbd.Options{})
	d := r.open(t)
	ctx := ctxT(t)
	if _, err := d.Dump(ctx); err != nil {
		t.Fatal(err)
	}
	r.fake.Close() // the phone is unplugged mid-run
	var err error
	// The server notices at once or on the next use; either way the calls end
	// with an error, never hang.
	for i := 0; i < 3 && err == nil; i++ {
		_, err = d.Dump(ctx)
	}
	if err == nil {
		t.Fatal("Dump kept working after the device went away")
	}
	if !errors.Is(err, device.ErrNoDevice) {
		t.Errorf("Dump after unplug = %v, want an error wrapping device.ErrNoDevice", err)
	}
	if !strings.Contains(err.Error(), r.serial) {
		t.Errorf("error %q does not name the device", err)
	}
	// The device being gone is the whole message: callers name their
	// action themselves (the loop printed "tap: tap: device ... is gone").
	if err := d.Tap(ctx, 1, 1); !errors.Is(err, device.ErrNoDevice) || !strings.HasPrefix(err.Error(), "device "+r.serial+" is gone") {
		t.Errorf("Tap after unplug = %v, want device.ErrNoDevice, starting with the device", err)
	}
}

func TestE2ESelect(t *testing.T) {
	r := newRig(t, adbd.Options{})
	ctx := ctxT(t)
	t.Setenv("ANDROID_SERIAL", "")
	info, err := r.client.Select(ctx, "")
	if err != nil || info.Serial != r.serial {
		t.Fatalf("Select with one device = %+v, %v", info, err)
	}
	if _, err := r.client.Select(ctx, "emulator-9998"); !errors.Is(err, device.ErrNoDevice) || !strings.Contains(err.Error(), r.serial) {
		t.Errorf("Select(unknown) = %v, want ErrNoDevice listing %s", err, r.serial)
	}
	// A second phone, not yet connected: a network serial connects it.
	fake2 := adbtest.StartDevice(t, adbtest.NewPhone(screenXML), adbd.Options{Model: "Second"})
	info, err = r.client.Select(ctx, fake2.Addr())
	if err != nil || info.Serial != fake2.Addr() || info.Model != "Second" {
		t.Fatalf("Select(network serial) = %+v, %v", info, err)
	}
	_, err = r.client.Select(ctx, "")
	if err == nil || !strings.Contains(err.Error(), r.serial) || !strings.Contains(err.Error(), fake2.Addr()) || !strings.Contains(err.Error(), "--device") {
		t.Errorf("Select with two devices = %v, want an error listing both and naming --device", err)
	}
	t.Setenv("ANDROID_SERIAL", fake2.Addr())
	if info, err := r.client.Select(ctx, ""); err != nil || info.Serial != fake2.Addr() {
		t.Errorf("Select with ANDROID_SERIAL = %+v, %v", info, err)
	}
	// A closed port as network serial: a clear connect error.
	closed := "127.0.0.1:" + strconv.Itoa(adbtest.FreePort(t))
	if _, err := r.client.Select(ctx, closed); err == nil || !strings.Contains(err.Error(), closed) {
		t.Errorf("Select(closed port) = %v", err)
	}
}

func TestE2EUnauthorized(t *testing.T) {
	srv := adbtest.StartServer(t)
	c := &adb.Client{Addr: srv.Addr()}
	ctx := ctxT(t)
	fake1 := adbtest.StartDevice(t, adbtest.NewPhone(screenXML), adbd.Options{RequireAuth: true})
	if _, err := c.Connect(ctx, fake1.Addr()); err == nil || !strings.Contains(err.Error(), "prompt") {
		t.Errorf("Connect(unauthorized phone) = %v, want advice about the prompt", err)
	}
	if _, err := adb.Open(ctx, c, ""); err == nil || !strings.Contains(err.Error(), "unauthorized: unlock the phone and accept") {
		t.Errorf("Open(only device, unauthorized) = %v", err)
	}
	// A network serial not yet connected: Select connects, and the phone
	// stays unauthorized; that is reported at once, not after a timeout.
	fake2 := adbtest.StartDevice(t, adbtest.NewPhone(screenXML), adbd.Options{RequireAuth: true})
	start := time.Now()
	_, err := c.Select(ctx, fake2.Addr())
	if err == nil || !strings.Contains(err.Error(), "device "+fake2.Addr()+" is unauthorized: unlock the phone and accept") {
		t.Errorf("Select(unauthorized phone) = %v, want advice to accept the prompt", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("Select took %v to report an unauthorized phone", time.Since(start))
	}
	if _, err := c.Select(ctx, ""); err == nil || !strings.Contains(err.Error(), fake1.Addr()+" (unauthorized)") {
		t.Errorf("Select with two unauthorized phones = %v", err)
	}
}

func TestServerNotRunning(t *testing.T) {
	port := adbtest.FreePort(t)
	c := &adb.Client{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	_, err := c.Devices(ctxT(t))
	if !errors.Is(err, adb.ErrServerNotRunning) {
		t.Fatalf("Devices on a closed port = %v, want ErrServerNotRunning", err)
	}
	if want := "adb -P " + strconv.Itoa(port) + " start-server"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say to run %q", err, want)
	}
}

func TestAutoStartServer(t *testing.T) {
	bin := adbtest.ADB(t)
	port := adbtest.FreePort(t)
	c := &adb.Client{Addr: "127.0.0.1:" + strconv.Itoa(port), AutoStart: true, ADBPath: bin}
	t.Cleanup((&adbtest.Server{ADB: bin, Port: port}).Kill)
	v, err := c.Version(ctxT(t))
	if err != nil || v < 29 {
		t.Fatalf("Version with auto-start = %d, %v", v, err)
	}
	// Without adb in reach the error says how to get it.
	c2 := &adb.Client{Addr: "127.0.0.1:" + strconv.Itoa(adbtest.FreePort(t)), AutoStart: true}
	t.Setenv("PATH", t.TempDir())
	_, err = c2.Version(ctxT(t))
	if !errors.Is(err, adb.ErrADBNotInstalled) || !strings.Contains(err.Error(), "apt-get install adb") {
		t.Errorf("Version without adb = %v, want ErrADBNotInstalled with install advice", err)
	}
}

func TestE2ECancel(t *testing.T) {
	r := newRig(t, adbd.Options{})
	d := r.open(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := d.Run(ctx, "sleep", "5")
		done <- err
	}()
	time.Sleep(200 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled command = %v, want context.Canceled", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("cancelling the context did not end the command")
	}
}

func TestE2EOpenAppNoLauncher(t *testing.T) {
	// Installed (pm lists it) but without a launcher activity: monkey aborts
	// with exit 252 and the error says so.
	r := newRig(t, adbd.Options{})
	r.phone.Installed = []string{"com.android.settings"}
	r.phone.NoLauncher = []string{"com.android.providers.media"}
	d := r.open(t)
	ctx := ctxT(t)
	if err := d.OpenApp(ctx, "com.android.settings"); err != nil {
		t.Fatalf("OpenApp(installed) = %v", err)
	}
	err := d.OpenApp(ctx, "com.android.providers.media")
	if err == nil || !strings.Contains(err.Error(), "no launcher activity") {
		t.Errorf("OpenApp(no launcher) = %v", err)
	}
}
