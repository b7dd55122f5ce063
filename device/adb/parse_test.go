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
