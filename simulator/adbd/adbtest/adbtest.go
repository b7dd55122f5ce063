// Package adbtest sets up end-to-end ADB tests: a private adb server (the
// real adb binary) on a free port, the fake adbd on another, connected to
// each other, all on 127.0.0.1. It also offers a small recording phone for
// tests that do not need a scenario.
package adbtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/droidgo/droidgo/device"
	"github.com/droidgo/droidgo/simulator/adbd"
)

// RequireEnv is the environment variable that turns a missing adb binary
// from a skip into a failure (CI sets it to 1).
const RequireEnv = "DROIDGO_REQUIRE_ADB"

// ADB returns the adb binary, or skips the test (fails it when
// DROIDGO_REQUIRE_ADB=1) when adb is not installed.
func ADB(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("adb")
	if err != nil {
		msg := "adb is not installed (Debian: apt-get install adb); the end-to-end ADB tests need the real adb server"
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("%s, and %s=1", msg, RequireEnv)
		}
		t.Skip(msg + "; set " + RequireEnv + "=1 to make this a failure")
	}
	return p
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Server is a private adb server.
type Server struct {
	ADB  string
	Port int
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.Port) }

// Run runs the adb binary against this server and returns its combined
// output.
func (s *Server) Run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, s.ADB, append([]string{"-P", strconv.Itoa(s.Port)}, args...)...)
	cmd.Env = append(os.Environ(), "ANDROID_ADB_SERVER_PORT="+strconv.Itoa(s.Port))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 2 * time.Second
	err := cmd.Run()
	return out.String(), err
}

// StartServer starts a private adb server on a free port and kills it when
// the test ends.
func StartServer(t testing.TB) *Server {
	t.Helper()
	bin := ADB(t)
	var last string
	// adb 29 very rarely deadlocks while starting; a second port gets a
	// fresh server.
	for attempt := 0; attempt < 2; attempt++ {
		s := &Server{ADB: bin, Port: FreePort(t)}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		out, err := s.Run(ctx, "start-server")
		cancel()
		if err == nil {
			t.Cleanup(s.Kill)
			return s
		}
		last = fmt.Sprintf("adb -P %d start-server: %v\n%s", s.Port, err, out)
		s.Kill()
	}
	t.Fatal(last)
	return nil
}

// Kill stops the server: `adb kill-server`, and, should the server not go
// (adb 29 can deadlock and ignore it), SIGKILL to the process serving this
// port, found by its command line.
func (s *Server) Kill() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.Run(ctx, "kill-server")
	for i := 0; i < 20; i++ {
		c, err := net.DialTimeout("tcp", s.Addr(), time.Second)
		if err != nil {
			return
		}
		c.Close()
		time.Sleep(50 * time.Millisecond)
	}
	killListener(s.Port)
}

// killListener kills the adb server process whose command line names
// tcp:PORT (adb -L tcp:PORT fork-server server). It needs /proc (Linux).
func killListener(port int) {
	procs, _ := os.ReadDir("/proc")
	want := "tcp:" + strconv.Itoa(port)
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + p.Name() + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) > 0 && strings.HasSuffix(args[0], "adb") && slices.Contains(args, want) && slices.Contains(args, "fork-server") {
			if proc, err := os.FindProcess(pid); err == nil {
				proc.Kill()
			}
		}
	}
}

// StartDevice starts the fake adbd for phone on 127.0.0.1 (free port) and
// closes it when the test ends.
func StartDevice(t testing.TB, phone device.Device, opts adbd.Options) *adbd.Server {
	t.Helper()
	d := adbd.New(phone, opts)
	if err := d.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	d.Start()
	t.Cleanup(func() { d.Close() })
	return d
}

// Connect connects the adb server to the fake device (adb connect) and waits
// until it is online. It returns the device's serial.
func Connect(t testing.TB, s *Server, d *adbd.Server) string {
	t.Helper()
	serial := d.Addr()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := s.Run(ctx, "connect", serial)
	if err != nil || !strings.Contains(out, "connected to") {
		t.Fatalf("adb connect %s: %v: %s", serial, err, out)
	}
	for {
		out, _ := s.Run(ctx, "-s", serial, "get-state")
		if strings.TrimSpace(out) == "device" {
			return serial
		}
		select {
		case <-ctx.Done():
			t.Fatalf("device %s did not come online: last state %q", serial, out)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Phone is a minimal recording device.Device for tests: it serves a fixed
// dump, can fail the next dumps, and records every action as a string.
type Phone struct {
	mu        sync.Mutex
	XML       []byte
	W, H      int
	App       string
	Installed []string
	// NoLauncher are packages listed as installed that cannot be opened.
	NoLauncher []string
	failDumps  int
	actions    []string
	typed      []string
}

var _ device.Device = (*Phone)(nil)

// NewPhone returns a 1080x2400 phone showing xml.
func NewPhone(xml string) *Phone {
	return &Phone{XML: []byte(xml), W: 1080, H: 2400, App: "com.android.settings"}
}

// FailNextDumps makes the next n dumps fail as uiautomator does when the
// screen never goes idle.
func (p *Phone) FailNextDumps(n int) {
	p.mu.Lock()
	p.failDumps = n
	p.mu.Unlock()
}

// Actions returns what was done, one string per action ("tap 10 20").
func (p *Phone) Actions() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.actions...)
}

// Typed returns each text typed, exactly as received.
func (p *Phone) Typed() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.typed...)
}

func (p *Phone) add(format string, a ...any) {
	p.mu.Lock()
	p.actions = append(p.actions, fmt.Sprintf(format, a...))
	p.mu.Unlock()
}

// Dump implements device.Device.
func (p *Phone) Dump(ctx context.Context) ([]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failDumps > 0 {
		p.failDumps--
		return nil, device.ErrDumpNotIdle
	}
	return append([]byte(nil), p.XML...), nil
}

// Tap implements device.Device.
func (p *Phone) Tap(ctx context.Context, x, y int) error { p.add("tap %d %d", x, y); return nil }

// LongPress implements device.Device.
func (p *Phone) LongPress(ctx context.Context, x, y int) error {
	p.add("long_press %d %d", x, y)
	return nil
}

// Swipe implements device.Device.
func (p *Phone) Swipe(ctx context.Context, x1, y1, x2, y2 int, d time.Duration) error {
	p.add("swipe %d %d %d %d %d", x1, y1, x2, y2, d.Milliseconds())
	return nil
}

// Type implements device.Device.
func (p *Phone) Type(ctx context.Context, text string) error {
	p.mu.Lock()
	p.typed = append(p.typed, text)
	p.mu.Unlock()
	p.add("type %q", text)
	return nil
}

// Key implements device.Device.
func (p *Phone) Key(ctx context.Context, key string) error { p.add("key %s", key); return nil }

// OpenApp implements device.Device.
func (p *Phone) OpenApp(ctx context.Context, pkg string) error {
	p.mu.Lock()
	inst := p.Installed
	noLaunch := slices.Contains(p.NoLauncher, pkg)
	p.mu.Unlock()
	if noLaunch {
		return fmt.Errorf("%s has no launcher activity", pkg)
	}
	if inst != nil {
		found := false
		for _, q := range inst {
			found = found || q == pkg
		}
		if !found {
			return fmt.Errorf("%w: %s", device.ErrUnknownApp, pkg)
		}
	}
	p.mu.Lock()
	p.App = pkg
	p.mu.Unlock()
	p.add("open %s", pkg)
	return nil
}

// Size implements device.Device.
func (p *Phone) Size(ctx context.Context) (int, int, error) { return p.W, p.H, nil }

// CurrentApp implements device.Device.
func (p *Phone) CurrentApp(ctx context.Context) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.App == "" {
		return "", errors.New("no app in front")
	}
	return p.App, nil
}

// Packages lists the installed packages, when set.
func (p *Phone) Packages() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.Installed == nil {
		return nil
	}
	return append(slices.Clone(p.Installed), p.NoLauncher...)
}
