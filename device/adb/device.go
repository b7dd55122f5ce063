package adb

import (
	"context"
	"io"
	"io/fs"
	"slices"
	"time"

	"github.com/droidgo/droidgo/device"
	"github.com/droidgo/droidgo/device/shell"
)

// DumpPath is where Dump asks uiautomator to write the screen.
const DumpPath = shell.DumpPath

// Device is a phone behind an adb server. It implements device.Device with
// the command lines of package shell, run by the device's shell service;
// the screen dump is read back with sync.
type Device struct {
	*shell.Device
	c      *Client
	info   DeviceInfo
	v2     bool
	statV2 bool
}

var _ device.Device = (*Device)(nil)

// Open selects a device (see Client.Select) and reads its features.
func Open(ctx context.Context, c *Client, serial string) (*Device, error) {
	info, err := c.Select(ctx, serial)
	if err != nil {
		return nil, err
	}
	feats, err := c.Features(ctx, info.Serial)
	if err != nil {
		return nil, err
	}
	d := &Device{
		c:      c,
		info:   info,
		v2:     slices.Contains(feats, "shell_v2"),
		statV2: slices.Contains(feats, "stat_v2"),
	}
	d.Device = shell.New(runner{d}, info.Serial, func(line string) string {
		return "adb -s " + info.Serial + " shell " + line
	})
	return d, nil
}

// Serial returns the device's serial.
func (d *Device) Serial() string { return d.info.Serial }

// Info returns the device as the server listed it.
func (d *Device) Info() DeviceInfo { return d.info }

// ShellV2 reports whether the device speaks the shell protocol v2.
func (d *Device) ShellV2() bool { return d.v2 }

// StatV2 reports whether the device's sync service speaks STA2.
func (d *Device) StatV2() bool { return d.statV2 }

// Client returns the client of the server the device is behind.
func (d *Device) Client() *Client { return d.c }

// Push writes what r holds to path on the device (sync SEND) with the
// permission bits perm.
func (d *Device) Push(ctx context.Context, path string, perm fs.FileMode, r io.Reader) error {
	return d.c.Push(ctx, d.info.Serial, path, perm, time.Now(), r)
}

// Stat reports a file of the device; a missing one is an error wrapping
// fs.ErrNotExist.
func (d *Device) Stat(ctx context.Context, path string) (FileInfo, error) {
	return d.c.Stat(ctx, d.info.Serial, path, d.statV2)
}

// runner runs lines with the shell service (v2 when the device has it)
// and reads files with sync.
type runner struct{ d *Device }

func (r runner) Run(ctx context.Context, line string) (shell.Result, error) {
	res, err := r.d.c.Shell(ctx, r.d.info.Serial, line, r.d.v2)
	return shell.Result{Stdout: res.Stdout, Stderr: res.Stderr, Exit: res.Exit, ExitKnown: res.V2}, err
}

func (r runner) ReadFile(ctx context.Context, path string) ([]byte, error) {
	data, _, err := r.d.c.Pull(ctx, r.d.info.Serial, path, r.d.statV2)
	return data, err
}
