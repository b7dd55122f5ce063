package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/droidgo/droidgo/device"
	"github.com/droidgo/droidgo/uixml"
)

const screenDump = "../../uixml/testdata/dumps/52-aosp-wifi-switch-off.xml"

func runScreenCmd(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runScreenWith(t, nil, stdin, args...)
}

// runScreenWith runs droidgo with the fakes setup puts in its deps.
func runScreenWith(t *testing.T, setup func(*deps), stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	h := newHarness(t)
	h.setup = setup
	r := h.runWith(context.Background(), strings.NewReader(stdin), args...)
	return r.code, r.stdout, r.stderr
}

func TestScreenFile(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(screenDump)
	if err != nil {
		t.Fatal(err)
	}
	s, err := uixml.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs := runScreenCmd(t, "", "screen", "--file", screenDump)
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	if out != s.Prompt() {
		t.Errorf("output is not the prompt:\n%s", out)
	}
	if !strings.Contains(out, `switch "Wi-Fi" off`) {
		t.Errorf("Wi-Fi row missing:\n%s", out)
	}

	code, stdinOut, _ := runScreenCmd(t, string(data), "screen", "--file", "-")
	if code != 0 || stdinOut != out {
		t.Errorf("--file - gave exit %d and a different output", code)
	}
}

func TestScreenJSON(t *testing.T) {
	t.Parallel()
	code, out, errs := runScreenCmd(t, "", "screen", "--file", screenDump, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.HasPrefix(out, `{"width":1080,"height":2220,"rotation":0,"truncated":false,"prompt":"Screen of com.android.settings`) {
		t.Errorf("JSON starts %.120s", out)
	}
	var got uixml.ScreenJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("output is not JSON: %v", err)
	}
	if strings.Count(out, "\n") != 1 {
		t.Errorf("JSON is not one line")
	}
	var wifi *uixml.ElementJSON
	for i := range got.Elements {
		if got.Elements[i].Label == "Wi-Fi" {
			wifi = &got.Elements[i]
		}
		if got.Elements[i].Index != i {
			t.Errorf("element %d has index %d", i, got.Elements[i].Index)
		}
	}
	// The row's own attributes; its switch's state in toggle_checked.
	if wifi == nil || wifi.Checkable || wifi.Checked || !wifi.Clickable || wifi.ToggleChecked == nil || *wifi.ToggleChecked {
		t.Errorf("Wi-Fi element %+v", wifi)
	}

	code, all, _ := runScreenCmd(t, "", "screen", "--file", screenDump, "--json", "--all")
	var gotAll uixml.ScreenJSON
	if code != 0 || json.Unmarshal([]byte(all), &gotAll) != nil {
		t.Fatalf("--all: exit %d, %.100s", code, all)
	}
	if len(gotAll.Elements) != 50 { // SOURCES.md: 50 nodes
		t.Errorf("--all lists %d nodes, want 50", len(gotAll.Elements))
	}
	hidden := 0
	for _, e := range gotAll.Elements {
		if e.Index == -1 {
			hidden++
		}
	}
	if hidden == 0 || len(gotAll.Elements)-hidden != len(got.Elements) {
		t.Errorf("--all: %d hidden of %d, %d shown", hidden, len(gotAll.Elements), len(got.Elements))
	}
}

func TestScreenAllText(t *testing.T) {
	t.Parallel()
	code, out, _ := runScreenCmd(t, "", "screen", "--file", screenDump, "--all")
	if code != 0 || strings.Count(out, "\n") != 50 || !strings.Contains(out, "- android.widget.Switch id=android:id/switch_widget") {
		t.Errorf("exit %d, output:\n%s", code, out)
	}
}

func TestScreenErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.xml")
	os.WriteFile(garbage, []byte("this is not xml"), 0o644)
	truncated := filepath.Join(dir, "cut.xml")
	data, _ := os.ReadFile(screenDump)
	os.WriteFile(truncated, data[:len(data)/2], 0o644)

	tests := []struct {
		name    string
		args    []string
		code    int
		stderr  string
		stdoutN bool // stdout must not be empty
	}{
		{"no source", []string{"screen"}, 2, "exactly one source", false},
		{"two sources", []string{"screen", "--file", screenDump, "--sim", "x"}, 2, "exactly one source", false},
		{"argument", []string{"screen", "foo.xml"}, 2, "takes no arguments", false},
		{"bad max", []string{"screen", "--file", screenDump, "--max-elements", "0"}, 2, "--max-elements", false},
		{"unknown flag", []string{"screen", "--nope"}, 2, "unknown flag", false},
		{"missing file", []string{"screen", "--file", filepath.Join(dir, "none.xml")}, 1, "no such file", false},
		{"garbage", []string{"screen", "--file", garbage}, 1, "not a uiautomator dump", false},
		{"truncated", []string{"screen", "--file", truncated}, 1, "truncated", true},
		{"truncated json", []string{"screen", "--file", truncated, "--json"}, 1, "truncated", true},
	}
	for _, tt := range tests {
		code, out, errs := runScreenCmd(t, "", tt.args...)
		if code != tt.code || !strings.Contains(errs, tt.stderr) {
			t.Errorf("%s: exit %d stderr %q; want exit %d and %q", tt.name, code, errs, tt.code, tt.stderr)
		}
		if strings.Count(errs, "\n") > 1 {
			t.Errorf("%s: stderr has more than one line: %q", tt.name, errs)
		}
		if tt.stdoutN != (out != "") {
			t.Errorf("%s: stdout %q", tt.name, out)
		}
		if tt.name == "truncated json" {
			var j uixml.ScreenJSON
			if err := json.Unmarshal([]byte(out), &j); err != nil || !j.Truncated || len(j.Elements) == 0 {
				t.Errorf("truncated JSON: %v %+v", err, j)
			}
		}
	}
}

// screenFakeDevice serves a fixed dump.
type screenFakeDevice struct {
	dump   []byte
	err    error
	closed bool
}

func (f *screenFakeDevice) Dump(context.Context) ([]byte, error)      { return f.dump, f.err }
func (f *screenFakeDevice) Tap(context.Context, int, int) error       { return nil }
func (f *screenFakeDevice) LongPress(context.Context, int, int) error { return nil }
func (f *screenFakeDevice) Swipe(context.Context, int, int, int, int, time.Duration) error {
	return nil
}
func (f *screenFakeDevice) Type(context.Context, string) error         { return nil }
func (f *screenFakeDevice) Key(context.Context, string) error          { return nil }
func (f *screenFakeDevice) OpenApp(context.Context, string) error      { return nil }
func (f *screenFakeDevice) Size(context.Context) (int, int, error)     { return 0, 0, nil }
func (f *screenFakeDevice) CurrentApp(context.Context) (string, error) { return "", nil }
func (f *screenFakeDevice) Close() error                               { f.closed = true; return nil }

func TestScreenSimAndDevice(t *testing.T) {
	t.Parallel()
	data, _ := os.ReadFile(screenDump)
	sim := &screenFakeDevice{dump: data}
	var gotScenario string
	fakeSim := func(d *deps) {
		d.openSim = func(_ context.Context, name string) (device.Device, error) {
			gotScenario = name
			return sim, nil
		}
	}
	code, out, errs := runScreenWith(t, fakeSim, "", "screen", "--sim", "wifi")
	if code != 0 || gotScenario != "wifi" || !strings.Contains(out, `switch "Wi-Fi" off`) || !sim.closed {
		t.Errorf("sim: exit %d scenario %q closed %v stderr %q out:\n%s", code, gotScenario, sim.closed, errs, out)
	}

	var gotSerial = "unset"
	adb := &screenFakeDevice{dump: data}
	fakeADB := func(d *deps) {
		d.openADB = func(_ context.Context, serial string) (device.Device, string, error) {
			gotSerial = serial
			return adb, "emulator-5554", nil
		}
	}
	if code, out, _ := runScreenWith(t, fakeADB, "", "screen", "--device", ""); code != 0 || gotSerial != "" || !strings.Contains(out, "Wi-Fi") {
		t.Errorf("device: exit %d serial %q", code, gotSerial)
	}
	adb.err = device.ErrDumpNotIdle
	if code, _, errs := runScreenWith(t, fakeADB, "", "screen", "--device", "emulator-5554"); code != 1 || !strings.Contains(errs, "emulator-5554") || !strings.Contains(errs, "idle") {
		t.Errorf("device dump error: exit %d, %q", code, errs)
	}
	noDevice := func(d *deps) {
		d.openADB = func(context.Context, string) (device.Device, string, error) {
			return nil, "", errors.New("no device attached")
		}
	}
	if code, _, errs := runScreenWith(t, noDevice, "", "screen", "--device", "Z"); code != 1 || !strings.Contains(errs, "no device attached") {
		t.Errorf("device open error: exit %d, %q", code, errs)
	}
}
