package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/droidgo/droidgo/device"
	"github.com/droidgo/droidgo/device/local"
	"github.com/droidgo/droidgo/simulator"
)

// TestLocalDeviceSelection: --device local opens the phone droidgo runs on
// on any machine; with no --device and no ANDROID_SERIAL the phone itself
// is the default only on a phone, as a user that may drive it; anywhere
// else the adb device is.
func TestLocalDeviceSelection(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name               string
		args               []string
		env                map[string]string
		isPhone, canDrive  bool
		wantLocal, wantADB bool
	}{
		{"explicit on a computer", []string{"--device", "local"}, nil, false, false, true, false},
		{"default on a computer", nil, nil, false, false, false, true},
		{"default on a phone as shell", nil, nil, true, true, true, false},
		{"default on a phone as an app", nil, nil, true, false, false, true},
		{"ANDROID_SERIAL on a phone", nil, map[string]string{"ANDROID_SERIAL": "127.0.0.1:5555"}, true, true, false, true},
		{"an adb serial on a phone", []string{"--device", "emulator-5554"}, nil, true, true, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			for k, v := range tt.env {
				h.env[k] = v
			}
			var openedLocal, openedADB bool
			h.setup = func(d *deps) {
				d.onPhone = func(context.Context) (local.Props, bool, bool) {
					return local.Props{Model: "Pixel 9", SDK: 35}, tt.isPhone, tt.canDrive
				}
				d.openLocal = func(context.Context) (device.Device, error) {
					openedLocal = true
					return simulator.Load("wifi")
				}
				d.openADB = func(context.Context, string) (device.Device, string, error) {
					openedADB = true
					return nil, "", errors.New("no adb here")
				}
			}
			args := append([]string{"run", "Turn on Wi-Fi", "--model", scriptFor("wifi", "1ms"), "--json"}, tt.args...)
			r := h.run(context.Background(), args...)
			if openedLocal != tt.wantLocal || openedADB != tt.wantADB {
				t.Fatalf("opened local %v, adb %v; want %v, %v\n%s%s", openedLocal, openedADB, tt.wantLocal, tt.wantADB, r.stdout, r.stderr)
			}
			if tt.wantLocal && !strings.Contains(r.stdout, `"device":"this phone"`) {
				t.Errorf("run on the local device names it %q", r.stdout[:min(len(r.stdout), 200)])
			}
		})
	}
}
