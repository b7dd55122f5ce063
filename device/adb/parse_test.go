package adb

import (
	"slices"
	"strings"
	"testing"
)

func TestParseDevicesL(t *testing.T) {
	in := "127.0.0.1:41417        device product:fakedev_phone model:FakeADB_Phone device:fakedev transport_id:1\n" +
		"0123456789ABCDEF       unauthorized usb:1-1 transport_id:2\n" +
		"emulator-5554          offline transport_id:3\n" +
		"R58M123ABC             no permissions (user in plugdev group; are your udev rules wrong?); see [http://developer.android.com/tools/device.html] usb:1-2 transport_id:4\n" +
		"\n"
	got := ParseDevicesL(in)
	want := []DeviceInfo{
		{Serial: "127.0.0.1:41417", State: "device", Product: "fakedev_phone", Model: "FakeADB_Phone", Device: "fakedev", TransportID: "1"},
		{Serial: "0123456789ABCDEF", State: "unauthorized", USB: "1-1", TransportID: "2"},
		{Serial: "emulator-5554", State: "offline", TransportID: "3"},
		{Serial: "R58M123ABC", State: "no permissions (user in plugdev group; are your udev rules wrong?); see [http://developer.android.com/tools/device.html]", USB: "1-2", TransportID: "4"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("ParseDevicesL =\n%+v\nwant\n%+v", got, want)
	}
	for i, d := range got {
		err := usable(d)
		if (err == nil) != (i == 0) {
			t.Errorf("usable(%s) = %v", d.State, err)
		}
	}
	for st, advice := range map[string]string{"unauthorized": "accept", "offline": "replug", "no permissions (x)": "udev", "recovery": "boot"} {
		if err := usable(DeviceInfo{Serial: "s", State: st}); err == nil || !strings.Contains(err.Error(), advice) {
			t.Errorf("usable(%q) = %v, want advice %q", st, err, advice)
		}
	}
}

func FuzzParseDevicesL(f *testing.F) {
	f.Add("127.0.0.1:5555 device product:a model:b device:c transport_id:1\n")
	f.Add("x no permissions (a b) usb:1\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, d := range ParseDevicesL(s) {
			if d.Serial == "" || strings.ContainsAny(d.Serial, " \n\t") {
				t.Fatalf("bad serial %q", d.Serial)
			}
		}
	})
}

func TestServerAddr(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want string
		ok   bool
	}{
		{nil, "127.0.0.1:5037", true},
		{map[string]string{"ANDROID_ADB_SERVER_PORT": "5038"}, "127.0.0.1:5038", true},
		{map[string]string{"ANDROID_ADB_SERVER_PORT": "x"}, "", false},
		{map[string]string{"ANDROID_ADB_SERVER_PORT": "70000"}, "", false},
		{map[string]string{"ADB_SERVER_SOCKET": "tcp:10.0.0.2:5037", "ANDROID_ADB_SERVER_PORT": "1"}, "10.0.0.2:5037", true},
		{map[string]string{"ADB_SERVER_SOCKET": "tcp:localhost:6000"}, "127.0.0.1:6000", true},
		{map[string]string{"ADB_SERVER_SOCKET": "tcp:6001"}, "127.0.0.1:6001", true},
		{map[string]string{"ADB_SERVER_SOCKET": "localabstract:adb"}, "", false},
		{map[string]string{"ANDROID_ADB_SERVER_ADDRESS": "192.168.1.9"}, "192.168.1.9:5037", true},
	}
	for _, tt := range tests {
		got, err := ServerAddr(func(k string) string { return tt.env[k] })
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ServerAddr(%v) = %q, %v; want %q ok=%v", tt.env, got, err, tt.want, tt.ok)
		}
	}
}

func TestParseWMSize(t *testing.T) {
	tests := []struct {
		in   string
		w, h int
		ok   bool
	}{
		{"Physical size: 1080x2400\n", 1080, 2400, true},
		{"Physical size: 1440x3120\nOverride size: 1080x2340\n", 1080, 2340, true},
		{"", 0, 0, false},
		{"Physical size: 0x0", 0, 0, false},
		{"error", 0, 0, false},
	}
	for _, tt := range tests {
		w, h, err := ParseWMSize(tt.in)
		if (err == nil) != tt.ok || w != tt.w || h != tt.h {
			t.Errorf("ParseWMSize(%q) = %d,%d,%v", tt.in, w, h, err)
		}
	}
}

func TestParseOrientation(t *testing.T) {
	tests := []struct {
		in  string
		rot int
		ok  bool
	}{
		{"  Viewport INTERNAL...\n      SurfaceOrientation: 1\n", 1, true},
		{"mCurrentRotation=ROTATION_270 ...", 3, true},
		{"mCurrentRotation=ROTATION_0", 0, true},
		{"  mRotation=2 mAltOrientation=false", 2, true},
		{"nothing here", 0, false},
	}
	for _, tt := range tests {
		r, ok := ParseOrientation(tt.in)
		if r != tt.rot || ok != tt.ok {
			t.Errorf("ParseOrientation(%q) = %d,%v", tt.in, r, ok)
		}
	}
}

func TestParseCurrentApp(t *testing.T) {
	tests := []struct{ in, want string }{
		{"  mCurrentFocus=Window{a1b2 u0 com.android.settings/com.android.settings.Settings}\n", "com.android.settings"},
		{"  mCurrentFocus=Window{a1b2 u0 StatusBar}\n  mFocusedApp=ActivityRecord{5f u0 com.google.android.deskclock/com.android.deskclock.DeskClock t12}\n", "com.google.android.deskclock"},
		{"  mCurrentFocus=null\n  mFocusedApp=null\n", ""},
		{"mFocusedApp=AppWindowToken{1 token=Token{2 ActivityRecord{3 u0 com.android.chrome/org.chromium.chrome.browser.ChromeTabbedActivity t5}}}", "com.android.chrome"},
	}
	for _, tt := range tests {
		got, _ := ParseCurrentApp(tt.in)
		if got != tt.want {
			t.Errorf("ParseCurrentApp(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestResolveLabel(t *testing.T) {
	installed := []string{"com.android.settings", "com.sec.android.app.clockpackage", "com.android.chrome", "org.telegram.messenger", "com.example.weather"}
	tests := []struct {
		label, want string
		candHas     string
	}{
		{"Settings", "com.android.settings", ""},
		{"clock", "com.sec.android.app.clockpackage", ""},
		{"CHROME", "com.android.chrome", ""},
		{"Weather", "com.example.weather", ""},
		{"Telegram", "org.telegram.messenger", ""},
		{"Setings", "", "Settings"},
		{"Camra", "", "Camera"},
		{"zzzzzzzzzzzzzzzz", "", ""},
	}
	for _, tt := range tests {
		got, cands := resolveLabel(tt.label, installed)
		if got != tt.want {
			t.Errorf("resolveLabel(%q) = %q, want %q", tt.label, got, tt.want)
		}
		if tt.candHas != "" && !slices.Contains(cands, tt.candHas) {
			t.Errorf("resolveLabel(%q) candidates %q lack %q", tt.label, cands, tt.candHas)
		}
		if tt.want == "" && tt.candHas == "" && len(cands) != 0 {
			t.Errorf("resolveLabel(%q) candidates %q, want none", tt.label, cands)
		}
	}
}

func TestParsePackages(t *testing.T) {
	got := ParsePackages("package:com.a.b\npackage:bad name\r\npackage:org.x.y\r\njunk\n")
	if !slices.Equal(got, []string{"com.a.b", "org.x.y"}) {
		t.Errorf("ParsePackages = %q", got)
	}
}
