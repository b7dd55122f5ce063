package local_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/droidgo/droidgo/device"
	"github.com/droidgo/droidgo/device/adb"
	"github.com/droidgo/droidgo/device/local"
	"github.com/droidgo/droidgo/device/shell"
	"github.com/droidgo/droidgo/simulator/adbd"
	"github.com/droidgo/droidgo/simulator/adbd/adbtest"
)

// userlandEnv makes the test binary one program of the fake userland.
const userlandEnv = "DROIDGO_LOCAL_TEST_USERLAND"

func TestMain(m *testing.M) {
	if os.Getenv(userlandEnv) == "1" {
		os.Exit(adbd.UserlandMain(os.Args[1], os.Args[2:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

const screenXML = `<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation="0"><node index="0" text="Wi-Fi" resource-id="" class="android.widget.TextView" package="com.android.settings" content-desc="" checkable="false" checked="false" clickable="true" enabled="true" focusable="true" focused="false" scrollable="false" long-clickable="false" password="false" selected="false" bounds="[0,200][1080,400]" /></hierarchy>`

// actions exercises every operation of device.Device, with hostile text,
// non-ASCII text (ADB Keyboard), a label and a package to open, and an
// unknown key. It returns what each call returned, as text.
func actions(ctx context.Context, d device.Device) []string {
	var got []string
	note := func(err error) {
		if err != nil {
			got = append(got, "error")
			return
		}
		got = append(got, "ok")
	}
	_, err := d.Dump(ctx)
	note(err)
	note(d.Tap(ctx, 540, 300))
	note(d.LongPress(ctx, 10, 20))
	note(d.Swipe(ctx, 1, 2, 3, 4, 500*time.Millisecond))
	note(d.Key(ctx, "back"))
	note(d.Key(ctx, "nosuch"))
	for _, text := range []string{`"; reboot; echo "`, "$(id) `id` it's 100% * ~", "héllo 日本 😀\nline"} {
		note(d.Type(ctx, text))
	}
	note(d.OpenApp(ctx, "Clock"))
	note(d.OpenApp(ctx, "com.android.settings"))
	w, h, err := d.Size(ctx)
	note(err)
	if w != 1080 || h != 2400 {
		got = append(got, "bad size")
	}
	app, err := d.CurrentApp(ctx)
	note(err)
	return append(got, app)
}

// TestSameLinesAsADB: the local device sends, through `sh -c` and the sh
// on PATH (here a fake Android userland), exactly the command lines the
// adb device sends to the fake adbd through Debian's adb server; the only
// extra line is the `cat` that reads the screen dump, which adb reads with
// sync instead.
func TestSameLinesAsADB(t *testing.T) {
	srv := adbtest.StartServer(t) // needs adb on the test's own PATH
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opts := adbd.Options{ADBKeyboard: true}
	overADB := adbtest.NewPhone(screenXML)
	overADB.Installed = []string{"com.android.settings", "com.google.android.deskclock"}
	fake := adbtest.StartDevice(t, overADB, opts)
	serial := adbtest.Connect(t, srv, fake)
	ad, err := adb.Open(ctx, &adb.Client{Addr: srv.Addr()}, serial)
	if err != nil {
		t.Fatal(err)
	}
	adbResults := actions(ctx, ad)

	onPhone := adbtest.NewPhone(screenXML)
	onPhone.Installed = overADB.Installed
	phoneSrv := adbd.New(onPhone, opts)
	defer phoneSrv.Close() // its files are in a temporary directory
	dir, err := os.MkdirTemp("", "dglocal")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	land, err := phoneSrv.StartUserland(dir, exe)
	if err != nil {
		t.Fatal(err)
	}
	defer land.Close()
	t.Setenv("PATH", land.Bin())
	for _, kv := range land.Env()[1:] {
		k, v, _ := cut(kv)
		t.Setenv(k, v)
	}
	t.Setenv(userlandEnv, "1")
	ld, err := local.Open()
	if err != nil {
		t.Fatal(err)
	}
	if ld.Shell() != land.Bin()+"/sh" {
		t.Errorf("local device runs lines with %s, want the sh on PATH", ld.Shell())
	}
	props, err := local.Probe(ctx)
	if err != nil || props.SDK != 34 || props.Model != "Droidgo_Simulator" {
		t.Errorf("Probe on the fake phone = %+v, %v", props, err)
	}
	before := len(phoneSrv.Commands())
	localResults := actions(ctx, ld)
	if !slices.Equal(adbResults, localResults) {
		t.Errorf("results differ:\nover adb: %q\nlocal:    %q", adbResults, localResults)
	}
	var adbLines, localLines []string
	for _, c := range fake.Commands() {
		adbLines = append(adbLines, c.Line)
	}
	cat, _ := shell.ShellLine("cat", shell.DumpPath)
	cats := 0
	for _, c := range phoneSrv.Commands()[before:] {
		if c.Service != adbd.UserlandService {
			t.Errorf("line %q reached the phone as %q, not through its sh", c.Line, c.Service)
		}
		if c.Rejected != "" {
			t.Errorf("the phone's sh refused %q: %s", c.Line, c.Rejected)
		}
		if c.Line == cat {
			cats++
			continue
		}
		localLines = append(localLines, c.Line)
	}
	if !slices.Equal(adbLines, localLines) {
		t.Errorf("lines differ:\nover adb: %q\nlocal:    %q", adbLines, localLines)
	}
	if cats != 1 {
		t.Errorf("the dump was read with %d cat lines, want 1", cats)
	}
	if !slices.Equal(overADB.Actions(), onPhone.Actions()) || !slices.Equal(overADB.Typed(), onPhone.Typed()) {
		t.Errorf("the phones saw different actions:\nover adb: %q %q\nlocal:    %q %q", overADB.Actions(), overADB.Typed(), onPhone.Actions(), onPhone.Typed())
	}
	if len(onPhone.Typed()) != 3 {
		t.Errorf("typed %q, want the three texts", onPhone.Typed())
	}
	t.Logf("%d lines, results %q", len(localLines), localResults)
}

func cut(kv string) (string, string, bool) {
	for i := 0; i < len(kv); i++ {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], true
		}
	}
	return kv, "", false
}

// TestDumpRetries: "could not get idle state" is retried locally as over
// adb, and a dump that never settles wraps device.ErrDumpNotIdle.
func TestDumpRetries(t *testing.T) {
	phone := adbtest.NewPhone(screenXML)
	srv := adbd.New(phone, adbd.Options{})
	defer srv.Close() // its files are in a temporary directory
	dir, err := os.MkdirTemp("", "dglocal")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	exe, _ := os.Executable()
	land, err := srv.StartUserland(dir, exe)
	if err != nil {
		t.Fatal(err)
	}
	defer land.Close()
	t.Setenv("PATH", land.Bin())
	k, v, _ := cut(land.Env()[1])
	t.Setenv(k, v)
	t.Setenv(userlandEnv, "1")
	d, err := local.Open()
	if err != nil {
		t.Fatal(err)
	}
	d.DumpRetryDelay = time.Millisecond
	ctx := context.Background()
	phone.FailNextDumps(2)
	if _, err := d.Dump(ctx); err != nil {
		t.Fatalf("Dump after two idle failures: %v", err)
	}
	phone.FailNextDumps(3)
	if _, err := d.Dump(ctx); !errors.Is(err, device.ErrDumpNotIdle) {
		t.Fatalf("Dump that never settles = %v, want ErrDumpNotIdle", err)
	}
}

// TestNoShell: without sh on PATH the local device says so.
func TestNoShell(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if _, err := local.Open(); err == nil {
		t.Fatal("Open without sh on PATH succeeded")
	}
	if _, err := local.Probe(context.Background()); err == nil {
		t.Fatal("Probe without getprop on PATH succeeded")
	}
}

// TestSameOnAndroidAndLinux: the local device is the same code in the
// android/arm64 build (a phone) and the linux/arm64 build (what the tests
// run under qemu): the same files and dependencies, and no test of the OS.
func TestSameOnAndroidAndLinux(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the package with")
	}
	list := func(goos string) string {
		cmd := exec.Command(goBin, "list", "-f", "{{.GoFiles}} {{.Deps}}", "github.com/droidgo/droidgo/device/local", "github.com/droidgo/droidgo/device/shell")
		cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH=arm64", "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go list for %s: %v\n%s", goos, err, out)
		}
		return string(out)
	}
	if a, l := list("android"), list("linux"); a != l {
		t.Errorf("android and linux builds differ:\nandroid: %s\nlinux:   %s", a, l)
	}
	for _, dir := range []string{".", "../shell"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(src), "runtime."+"GOOS") || strings.Contains(string(src), "//go:"+"build") {
				t.Errorf("%s depends on the OS it is built for", f)
			}
		}
	}
}
