// Package shell builds the command lines droidgo sends to a phone's shell
// (quoting, the typing of text, the launch of apps, the screen dump and its
// retries) and implements device.Device over anything that runs them: adb's
// shell service from a computer (device/adb) or `sh -c` on the phone itself
// (device/local). Both send the same lines, because both are this code.
package shell

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/device"
)

// DumpPath is where Dump asks uiautomator to write the screen.
const DumpPath = "/sdcard/window_dump.xml"

// ADBKeyboardIME is ADB Keyboard's input method id; with it active, Type can
// send any Unicode text as a base64 broadcast.
const ADBKeyboardIME = "com.android.adbkeyboard/.AdbIME"

// Result is what one command line produced.
type Result struct {
	Stdout, Stderr []byte
	// Exit is the exit status when ExitKnown (adb's shell v1 has none; its
	// stderr is merged into Stdout).
	Exit      int
	ExitKnown bool
}

// Output returns stdout and stderr together.
func (r Result) Output() string { return string(r.Stdout) + string(r.Stderr) }

// Runner runs command lines on a phone's shell (/system/bin/sh).
type Runner interface {
	// Run runs line, which the caller built with ShellLine. An error means
	// the line could not be run or its output not read (a phone that is
	// gone wraps device.ErrNoDevice); a command that fails is a Result.
	Run(ctx context.Context, line string) (Result, error)
	// ReadFile reads a file of the phone.
	ReadFile(ctx context.Context, path string) ([]byte, error)
}

// Device is a phone driven through its shell. It implements device.Device;
// every argument that reaches the shell goes through ShellLine.
type Device struct {
	r    Runner
	name string
	// hint turns a command line into what a person would type to run it
	// ("adb -s SERIAL shell LINE"), for advice in errors.
	hint func(line string) string

	// DumpAttempts is how many times Dump runs uiautomator before giving up
	// on "could not get idle state" (default 3).
	DumpAttempts int
	// DumpRetryDelay is the pause between those attempts (default 500ms).
	DumpRetryDelay time.Duration

	mu       sync.Mutex
	lastDump time.Duration
	pkgs     []string
	physW    int
	physH    int
}

var _ device.Device = (*Device)(nil)

// New returns a device that runs its commands with r. name names the phone
// in errors; hint, when not nil, says how a person would run a line on it.
func New(r Runner, name string, hint func(line string) string) *Device {
	if hint == nil {
		hint = func(line string) string { return line }
	}
	return &Device{r: r, name: name, hint: hint, DumpAttempts: 3, DumpRetryDelay: 500 * time.Millisecond}
}

// LastDumpDuration is how long the last successful Dump took, retries and
// the file transfer included.
func (d *Device) LastDumpDuration() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lastDump
}

// Run runs argv on the phone's shell, each word quoted.
func (d *Device) Run(ctx context.Context, argv ...string) (Result, error) {
	line, err := ShellLine(argv...)
	if err != nil {
		return Result{}, err
	}
	return d.r.Run(ctx, line)
}

// run runs argv and turns a failure (a non-zero exit, or a tell-tale error
// text when the exit status is unknown) into an error naming what was
// being done.
func (d *Device) run(ctx context.Context, what string, argv ...string) (string, error) {
	res, err := d.Run(ctx, argv...)
	if err != nil {
		if errors.Is(err, device.ErrNoDevice) {
			// The phone is gone: which command found out does not
			// matter, and the caller names its action itself (the loop
			// said "tap: tap: device ... is gone").
			return "", err
		}
		return "", fmt.Errorf("%s on %s: %w", what, d.name, err)
	}
	out := res.Output()
	if res.ExitKnown && res.Exit != 0 {
		return out, fmt.Errorf("%s on %s: %s exited with status %d: %s", what, d.name, argv[0], res.Exit, firstLine(out))
	}
	if !res.ExitKnown && looksFailed(out) {
		return out, fmt.Errorf("%s on %s: %s failed: %s", what, d.name, argv[0], firstLine(out))
	}
	return out, nil
}

func looksFailed(out string) bool {
	for _, s := range []string{"inaccessible or not found", "Exception", "Error:", "Usage:"} {
		if strings.Contains(out, s) {
			return true
		}
	}
	return false
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if s == "" {
		return "(no output)"
	}
	return short(s)
}

// Dump runs `uiautomator dump` to DumpPath and reads the file back.
// "could not get idle state" (and the similar null-root error) is retried;
// when it persists the error wraps device.ErrDumpNotIdle.
func (d *Device) Dump(ctx context.Context) ([]byte, error) {
	start := time.Now()
	attempts := max(d.DumpAttempts, 1)
	var last string
	for i := 0; i < attempts; i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("uiautomator dump: %w", ctx.Err())
			case <-time.After(d.DumpRetryDelay):
			}
		}
		res, err := d.Run(ctx, "uiautomator", "dump", DumpPath)
		if err != nil {
			return nil, fmt.Errorf("uiautomator dump: %w", err)
		}
		out := res.Output()
		if strings.Contains(out, "could not get idle state") || strings.Contains(out, "null root node") {
			last = firstLine(out)
			continue
		}
		if !strings.Contains(out, "hierchary dumped to") && !strings.Contains(out, "hierarchy dumped to") {
			return nil, fmt.Errorf("uiautomator dump on %s failed: %s", d.name, firstLine(out))
		}
		data, err := d.r.ReadFile(ctx, DumpPath)
		if err != nil {
			return nil, fmt.Errorf("read the screen dump: %w", err)
		}
		d.mu.Lock()
		d.lastDump = time.Since(start)
		d.mu.Unlock()
		return data, nil
	}
	return nil, fmt.Errorf("%w on %s after %d attempts (%s)", device.ErrDumpNotIdle, d.name, attempts, last)
}

func checkPoint(x, y int) error {
	if x < 0 || y < 0 || x > 100000 || y > 100000 {
		return fmt.Errorf("point (%d,%d) is off the screen", x, y)
	}
	return nil
}

// Tap taps at (x, y).
func (d *Device) Tap(ctx context.Context, x, y int) error {
	if err := checkPoint(x, y); err != nil {
		return fmt.Errorf("tap: %w", err)
	}
	_, err := d.run(ctx, "tap", "input", "tap", strconv.Itoa(x), strconv.Itoa(y))
	return err
}

// LongPress holds (x, y) for 600ms, as a swipe that does not move.
func (d *Device) LongPress(ctx context.Context, x, y int) error {
	if err := checkPoint(x, y); err != nil {
		return fmt.Errorf("long press: %w", err)
	}
	xs, ys := strconv.Itoa(x), strconv.Itoa(y)
	_, err := d.run(ctx, "long press", "input", "swipe", xs, ys, xs, ys, "600")
	return err
}

// Swipe moves a finger from (x1,y1) to (x2,y2) over dur (300ms if 0).
func (d *Device) Swipe(ctx context.Context, x1, y1, x2, y2 int, dur time.Duration) error {
	if err := checkPoint(x1, y1); err != nil {
		return fmt.Errorf("swipe: %w", err)
	}
	if err := checkPoint(x2, y2); err != nil {
		return fmt.Errorf("swipe: %w", err)
	}
	ms := dur.Milliseconds()
	if ms <= 0 {
		ms = 300
	}
	_, err := d.run(ctx, "swipe", "input", "swipe", strconv.Itoa(x1), strconv.Itoa(y1), strconv.Itoa(x2), strconv.Itoa(y2), strconv.FormatInt(min(ms, 60000), 10))
	return err
}

// Key presses a key by its action-space name.
func (d *Device) Key(ctx context.Context, key string) error {
	code, ok := action.Keys[key]
	if !ok {
		return fmt.Errorf("press key %q: %w (known: %s)", key, device.ErrUnknownKey, strings.Join(action.KeyNames(), ", "))
	}
	_, err := d.run(ctx, "press key "+key, "input", "keyevent", strconv.Itoa(code))
	return err
}

// Type types text literally into the focused field. Printable ASCII goes
// through `input text` (spaces as %s, the argument single-quoted for sh);
// anything else needs ADB Keyboard as the active input method, or Type fails
// without typing anything. NUL bytes are refused.
func (d *Device) Type(ctx context.Context, text string) error {
	if strings.IndexByte(text, 0) >= 0 {
		return fmt.Errorf("type text: refused: the text %w", ErrNUL)
	}
	if text == "" {
		return nil
	}
	arg, err := InputTextArg(text)
	if err == nil {
		_, err = d.run(ctx, "type text", "input", "text", arg)
		return err
	}
	if !errors.Is(err, ErrNeedsIME) {
		return fmt.Errorf("type text: %w", err)
	}
	if ierr := d.adbKeyboardReady(ctx); ierr != nil {
		return fmt.Errorf("type text: %v; %w", err, ierr)
	}
	msg := base64.StdEncoding.EncodeToString([]byte(text))
	out, rerr := d.run(ctx, "type text", "am", "broadcast", "-a", "ADB_INPUT_B64", "--es", "msg", msg)
	if rerr != nil {
		return rerr
	}
	if !strings.Contains(out, "Broadcast completed") {
		return fmt.Errorf("type text on %s: ADB Keyboard broadcast not delivered: %s", d.name, firstLine(out))
	}
	return nil
}

// adbKeyboardReady checks that ADB Keyboard is the current input method.
func (d *Device) adbKeyboardReady(ctx context.Context) error {
	out, err := d.run(ctx, "check input method", "settings", "get", "secure", "default_input_method")
	if err != nil {
		return err
	}
	if strings.TrimSpace(out) == ADBKeyboardIME {
		return nil
	}
	pkgs, err := d.Packages(ctx)
	if err != nil {
		return err
	}
	if slices.Contains(pkgs, "com.android.adbkeyboard") {
		return fmt.Errorf("ADB Keyboard is installed but not the active keyboard: run `%s` and `%s`", d.hint("ime enable "+ADBKeyboardIME), d.hint("ime set "+ADBKeyboardIME))
	}
	return errors.New("ADB Keyboard (com.android.adbkeyboard), which can, is not installed: install it and make it the active keyboard")
}

// Packages lists installed packages (cached after the first call).
func (d *Device) Packages(ctx context.Context) ([]string, error) {
	d.mu.Lock()
	p := d.pkgs
	d.mu.Unlock()
	if p != nil {
		return p, nil
	}
	out, err := d.run(ctx, "list packages", "pm", "list", "packages")
	if err != nil {
		return nil, err
	}
	p = ParsePackages(out)
	if p == nil {
		p = []string{}
	}
	d.mu.Lock()
	d.pkgs = p
	d.mu.Unlock()
	return p, nil
}

// OpenApp launches an app by package name or by label through its launcher
// intent. Labels are resolved with a built-in table and the installed
// packages; an unknown one wraps device.ErrUnknownApp with the closest
// matches.
func (d *Device) OpenApp(ctx context.Context, nameOrPackage string) error {
	name := strings.TrimSpace(nameOrPackage)
	if name == "" || strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return fmt.Errorf("open app %q: %w: not an app name", nameOrPackage, device.ErrUnknownApp)
	}
	pkgs, err := d.Packages(ctx)
	if err != nil {
		return err
	}
	pkg := name
	if !IsPackageName(name) {
		var cands []string
		pkg, cands = resolveLabel(name, pkgs)
		if pkg == "" {
			return unknownApp(name, cands)
		}
	} else if !slices.Contains(pkgs, pkg) {
		// A label can look like a package ("Maps.me"); try it as one.
		if p, _ := resolveLabel(name, pkgs); p != "" {
			pkg = p
		} else {
			return unknownApp(name, closest(strings.ToLower(name[strings.LastIndexByte(name, '.')+1:]), pkgs))
		}
	}
	out, err := d.run(ctx, "open app "+pkg, "monkey", "-p", pkg, "-c", "android.intent.category.LAUNCHER", "1")
	if strings.Contains(out, "No activities found") || strings.Contains(out, "monkey aborted") {
		// monkey exits 252 here; the text says why.
		return fmt.Errorf("open app %q on %s: %s has no launcher activity to start", name, d.name, pkg)
	}
	return err
}

func unknownApp(name string, cands []string) error {
	if len(cands) == 0 {
		return fmt.Errorf("open app %q: %w: no installed app has that name or package", name, device.ErrUnknownApp)
	}
	return fmt.Errorf("open app %q: %w; closest: %s", name, device.ErrUnknownApp, strings.Join(cands, ", "))
}

// Size returns the screen size in the current orientation: `wm size`
// (override over physical) swapped when the display is turned a quarter.
func (d *Device) Size(ctx context.Context) (int, int, error) {
	d.mu.Lock()
	w, h := d.physW, d.physH
	d.mu.Unlock()
	if w == 0 {
		out, err := d.run(ctx, "screen size", "wm", "size")
		if err != nil {
			return 0, 0, err
		}
		if w, h, err = ParseWMSize(out); err != nil {
			return 0, 0, fmt.Errorf("screen size on %s: %w", d.name, err)
		}
		d.mu.Lock()
		d.physW, d.physH = w, h
		d.mu.Unlock()
	}
	rot, err := d.rotation(ctx)
	if err != nil {
		return 0, 0, err
	}
	if rot%2 == 1 {
		w, h = h, w
	}
	return w, h, nil
}

func (d *Device) rotation(ctx context.Context) (int, error) {
	out, err := d.run(ctx, "screen rotation", "dumpsys", "input")
	if err != nil {
		return 0, err
	}
	if r, ok := ParseOrientation(out); ok {
		return r, nil
	}
	out, err = d.run(ctx, "screen rotation", "dumpsys", "window", "displays")
	if err != nil {
		return 0, err
	}
	r, _ := ParseOrientation(out)
	return r, nil
}

// CurrentApp returns the package in the foreground, from dumpsys window.
func (d *Device) CurrentApp(ctx context.Context) (string, error) {
	for _, args := range [][]string{{"dumpsys", "window", "windows"}, {"dumpsys", "window"}} {
		out, err := d.run(ctx, "current app", args...)
		if err != nil {
			return "", err
		}
		if p, ok := ParseCurrentApp(out); ok {
			return p, nil
		}
	}
	return "", fmt.Errorf("current app on %s: dumpsys window names no focused app", d.name)
}
