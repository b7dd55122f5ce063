package adbd_test

// The fake adbd against the real adb binary: what a person does by hand
// with `adb shell`, `adb push`, `adb pull`, `adb ls` must work.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/droidgo/droidgo/simulator/adbd"
	"github.com/droidgo/droidgo/simulator/adbd/adbtest"
)

func TestRealADBClient(t *testing.T) {
	srv := adbtest.StartServer(t)
	phone := adbtest.NewPhone(`<hierarchy rotation="0"><node text="x" bounds="[0,0][1,1]"/></hierarchy>`)
	fake := adbtest.StartDevice(t, phone, adbd.Options{})
	serial := adbtest.Connect(t, srv, fake)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adb := func(args ...string) (string, int) {
		out, err := srv.Run(ctx, append([]string{"-s", serial}, args...)...)
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("adb %v: %v", args, err)
		}
		return out, code
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "in.txt")
	if err := os.WriteFile(src, []byte("pushed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		out  string
		code int
	}{
		{[]string{"shell", "echo", "hi"}, "hi\n", 0},
		{[]string{"shell", "exit 7"}, "", 7},
		{[]string{"shell", "nosuch"}, "/system/bin/sh: nosuch: inaccessible or not found\n", 127},
		{[]string{"shell", "echo a; reboot"}, "syntax refused", 2},
		{[]string{"shell", "-x", "echo", "v1"}, "v1\n", 0},
		{[]string{"shell", "-tt", "echo", "pty"}, "pty\r\n", 0},
		{[]string{"push", src, "/sdcard/Download/"}, "1 file pushed", 0},
		{[]string{"shell", "cat", "/sdcard/Download/in.txt"}, "pushed\n", 0},
		{[]string{"exec-out", "cat", "/sdcard/Download/in.txt"}, "pushed\n", 0},
		{[]string{"ls", "/sdcard/Download"}, "in.txt", 0},
		{[]string{"shell", "uiautomator", "dump"}, "UI hierchary dumped to: /sdcard/window_dump.xml\n", 0},
		{[]string{"pull", "/sdcard/window_dump.xml", dir}, "1 file pulled", 0},
		{[]string{"pull", "/sdcard/missing.xml", dir}, "No such file or directory", 1},
		{[]string{"shell", "input", "text", "'a%sb'"}, "", 0},
		{[]string{"shell", "getprop", "ro.product.model"}, "Droidgo_Simulator\n", 0},
	}
	for _, tt := range tests {
		out, code := adb(tt.args...)
		if code != tt.code || !strings.Contains(out, tt.out) {
			t.Errorf("adb %q = %d %q, want %d %q", tt.args, code, out, tt.code, tt.out)
		}
	}
	if got, err := os.ReadFile(filepath.Join(dir, "window_dump.xml")); err != nil || !strings.Contains(string(got), "<hierarchy") {
		t.Errorf("pulled dump: %v %q", err, got)
	}
	if typed := phone.Typed(); len(typed) != 1 || typed[0] != "a b" {
		t.Errorf("typed %q, want [\"a b\"]", typed)
	}
	// A script on stdin: the shell runs it line by line and ends with the
	// last exit status.
	cmd := exec.CommandContext(ctx, srv.ADB, "-P", strconv.Itoa(srv.Port), "-s", serial, "shell")
	cmd.Stdin = strings.NewReader("echo one\ngetprop ro.product.device\nexit 4\n")
	out, err := cmd.CombinedOutput()
	ee, _ := err.(*exec.ExitError)
	if ee == nil || ee.ExitCode() != 4 || string(out) != "one\ndroidgosim\n" {
		t.Errorf("adb shell < script = %v %q", err, out)
	}
	// Services the fake does not offer are refused, not half-served.
	if out, code := adb("reboot"); code == 0 {
		t.Errorf("adb reboot succeeded: %q", out)
	}
	if rs := fake.RefusedServices(); len(rs) == 0 || !strings.HasPrefix(rs[len(rs)-1], "reboot:") {
		t.Errorf("refused services %q, want reboot:", rs)
	}
	if len(phone.Actions()) != 1 {
		t.Errorf("phone actions %q, want only the typing", phone.Actions())
	}
}
