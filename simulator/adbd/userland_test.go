package adbd_test

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/droidgo/droidgo/simulator/adbd"
	"github.com/droidgo/droidgo/simulator/adbd/adbtest"
)

// userlandEnv makes the test binary one program of the fake userland.
const userlandEnv = "DROIDGO_ADBD_TEST_USERLAND"

func TestMain(m *testing.M) {
	if os.Getenv(userlandEnv) == "1" {
		os.Exit(adbd.UserlandMain(os.Args[1], os.Args[2:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// TestUserland: the fake userland's programs carry commands out on the
// phone, and its sh is as strict as the fake adbd's: one simple command of
// literal words, looked up on PATH, each line logged with its exit status.
func TestUserland(t *testing.T) {
	phone := adbtest.NewPhone(`<hierarchy rotation="0"/>`)
	srv := adbd.New(phone, adbd.Options{})
	defer srv.Close()
	dir, err := os.MkdirTemp("", "dgland")
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
	env := append(os.Environ(), userlandEnv+"=1")
	env = append(env, land.Env()...)
	sh := land.Bin() + "/sh"
	tests := []struct {
		line, out string
		code      int
		rejected  bool
	}{
		{"getprop ro.product.model", "Droidgo_Simulator\n", 0, false},
		{"input tap 10 20", "", 0, false},
		{"input text 'a%sb'", "", 0, false},
		{"echo a; reboot", "syntax refused", 2, true},
		{"echo $(id)", "syntax refused", 2, true},
		{"nosuch arg", "nosuch: inaccessible or not found", 127, false},
		{"false", "", 1, false},
	}
	for _, tt := range tests {
		cmd := exec.Command(sh, "-c", tt.line)
		cmd.Env = env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tt.code || !strings.Contains(out.String(), tt.out) {
			t.Errorf("sh -c %q = %d %q, want %d %q", tt.line, code, out.String(), tt.code, tt.out)
		}
	}
	cmds := srv.Commands()
	if len(cmds) != len(tests) {
		t.Fatalf("%d lines logged, want %d: %+v", len(cmds), len(tests), cmds)
	}
	for i, c := range cmds {
		if c.Service != adbd.UserlandService || c.Line != tests[i].line || (c.Rejected != "") != tests[i].rejected || c.Exit != tests[i].code {
			t.Errorf("logged %+v for %q", c, tests[i].line)
		}
	}
	if got := phone.Actions(); len(got) != 2 || got[0] != "tap 10 20" {
		t.Errorf("phone actions %q", got)
	}
	if got := phone.Typed(); len(got) != 1 || got[0] != "a b" {
		t.Errorf("typed %q", got)
	}
	// A program outside the phone's userland cannot reach it.
	cmd := exec.Command(sh, "-c", "id")
	cmd.Env = append(os.Environ(), userlandEnv+"=1", "PATH="+land.Bin())
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), adbd.UserlandSocketEnv) {
		t.Errorf("without the socket: %v %q", err, out)
	}
}
