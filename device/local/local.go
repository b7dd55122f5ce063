// Package local drives the phone droidgo runs on: each phone command is
// `sh -c LINE` with the sh found on PATH (on Android /system/bin/sh), LINE
// being exactly what device/adb sends to `adb shell` for it (both build
// their lines with package shell). As the shell user, which adb starts
// programs as, uiautomator and input work directly; an app's user (Termux)
// may not inject input and drives the phone through its own adbd instead.
package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/droidgo/droidgo/device"
	"github.com/droidgo/droidgo/device/shell"
)

// Serial is the --device value that selects this phone.
const Serial = "local"

// Name is how the phone names itself in lists and headers.
const Name = "this phone"

// maxOutput bounds what one command may print, as over adb.
const maxOutput = 64 << 20

// Device is the phone this process runs on. It implements device.Device.
type Device struct {
	*shell.Device
	sh string
}

var _ device.Device = (*Device)(nil)

// Open returns the local device. It fails when no sh is on PATH.
func Open() (*Device, error) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		return nil, fmt.Errorf("%s: no sh on PATH to run phone commands with: %w", Name, err)
	}
	d := &Device{sh: sh}
	d.Device = shell.New(runner{sh}, Name, nil)
	return d, nil
}

// Shell returns the sh the device runs its commands with.
func (d *Device) Shell() string { return d.sh }

type runner struct{ sh string }

// limited keeps the first maxOutput bytes and notes that more came.
type limited struct {
	buf  bytes.Buffer
	over bool
}

func (l *limited) Write(p []byte) (int, error) {
	if room := maxOutput - l.buf.Len(); len(p) > room {
		l.buf.Write(p[:max(room, 0)])
		l.over = true
		return len(p), nil
	}
	return l.buf.Write(p)
}

func (r runner) Run(ctx context.Context, line string) (shell.Result, error) {
	if strings.IndexByte(line, 0) >= 0 {
		return shell.Result{}, fmt.Errorf("command line %w", shell.ErrNUL)
	}
	cmd := exec.CommandContext(ctx, r.sh, "-c", line)
	var stdout, stderr limited
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A command that leaves a child holding its output open must not
	// hold the agent.
	cmd.WaitDelay = 2 * time.Second
	err := cmd.Run()
	res := shell.Result{Stdout: stdout.buf.Bytes(), Stderr: stderr.buf.Bytes(), ExitKnown: true}
	if stdout.over || stderr.over {
		return res, fmt.Errorf("sh -c %q: output larger than %d bytes", short(line), maxOutput)
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return res, ctx.Err()
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		res.Exit = ee.ExitCode()
	default:
		return res, fmt.Errorf("sh -c %q: %w", short(line), err)
	}
	return res, nil
}

// ReadFile reads path with `cat`, through the same shell, so that the
// phone's own access rules (and a test's fake phone) decide.
func (r runner) ReadFile(ctx context.Context, path string) ([]byte, error) {
	line, err := shell.ShellLine("cat", path)
	if err != nil {
		return nil, err
	}
	res, err := r.Run(ctx, line)
	if err != nil {
		return nil, err
	}
	if res.Exit != 0 {
		msg := strings.TrimSpace(string(res.Stderr))
		if strings.Contains(msg, "No such file") {
			return nil, fmt.Errorf("read %s: %s: %w", path, msg, fs.ErrNotExist)
		}
		return nil, fmt.Errorf("read %s: cat exited with status %d: %s", path, res.Exit, msg)
	}
	return res.Stdout, nil
}

func short(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// Props are what the phone says about itself (getprop).
type Props struct {
	Model, Product, Device string
	SDK                    int
}

// Probe asks getprop, through the phone's shell, what this machine is. It
// fails (quickly, without running anything) where no getprop is on PATH:
// the machine is not an Android phone.
func Probe(ctx context.Context) (Props, error) {
	if _, err := exec.LookPath("getprop"); err != nil {
		return Props{}, fmt.Errorf("not an Android phone: %w", err)
	}
	d, err := Open()
	if err != nil {
		return Props{}, err
	}
	get := func(key string) string {
		res, err := d.Run(ctx, "getprop", key)
		if err != nil || res.Exit != 0 {
			return ""
		}
		return strings.TrimSpace(string(res.Stdout))
	}
	p := Props{Model: get("ro.product.model"), Product: get("ro.product.name"), Device: get("ro.product.device")}
	sdk, err := strconv.Atoi(get("ro.build.version.sdk"))
	if err != nil || sdk <= 0 {
		return p, errors.New("not an Android phone: getprop names no SDK version")
	}
	p.SDK = sdk
	return p, nil
}

// ShellUID and RootUID are the users that may inject input with `input`:
// the shell user that adb starts programs as, and root.
const (
	ShellUID = 2000
	RootUID  = 0
)

// CanDrive reports whether a process of user uid may drive the phone
// directly (inject input, dump any app's screen).
func CanDrive(uid int) bool { return uid == ShellUID || uid == RootUID }
