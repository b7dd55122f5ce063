package adbd

import (
	"strings"
	"testing"
)

// TestToybox: the file tools behave as Android's toybox does on the lines
// droidgo deploy sends, on the fake's files.
func TestToybox(t *testing.T) {
	s := New(nil, Options{FreeBytes: 5 << 30})
	defer s.Close()
	s.WriteFile("/data/local/tmp/a", []byte("0123456789"))
	s.WriteFile("/data/local/tmp/.hidden", []byte("x"))
	tests := []struct {
		argv     []string
		code     int
		out, err string
	}{
		{[]string{"sha256sum", "/data/local/tmp/a", "/data/local/tmp/none"}, 1,
			"84d89877f0d4041efb6bf91a16f0248f2fd573e6af05c19f96bedb9f882f7882  /data/local/tmp/a\n",
			"sha256sum: /data/local/tmp/none: No such file or directory\n"},
		{[]string{"ls", "/data/local/tmp"}, 0, "a\n", ""},
		{[]string{"ls", "-a", "/data/local/tmp"}, 0, ".hidden\na\n", ""},
		{[]string{"mkdir", "/data/local/tmp/x/y"}, 1, "", "mkdir: '/data/local/tmp/x/y': No such file or directory\n"},
		{[]string{"mkdir", "-p", "/data/local/tmp/x/y"}, 0, "", ""},
		{[]string{"mkdir", "/data/local/tmp/x"}, 1, "", "mkdir: '/data/local/tmp/x': File exists\n"},
		{[]string{"df", "-k", "/data/local/tmp/x"}, 0,
			"Filesystem      1K-blocks     Used Available Use% Mounted on\n/dev/block/dm-46  10485760  5242880   5242880  50% /data\n", ""},
		{[]string{"df", "-k", "/nowhere"}, 1, "Filesystem      1K-blocks     Used Available Use% Mounted on\n", "df: /nowhere: No such file or directory\n"},
		// dd joins a part at its place and cuts what followed.
		{[]string{"dd", "if=/data/local/tmp/a", "of=/data/local/tmp/b", "bs=4", "seek=0"}, 0, "", "2+1 records in\n2+1 records out\n10 bytes copied\n"},
		{[]string{"dd", "if=/data/local/tmp/a", "of=/data/local/tmp/b", "bs=4", "seek=1"}, 0, "", "2+1 records in\n2+1 records out\n10 bytes copied\n"},
		{[]string{"cat", "/data/local/tmp/b"}, 0, "01230123456789", ""},
		{[]string{"dd", "if=/data/local/tmp/a", "of=/data/local/tmp/b", "bs=4", "count=1", "conv=notrunc"}, 0, "", "1+0 records in\n1+0 records out\n4 bytes copied\n"},
		{[]string{"cat", "/data/local/tmp/b"}, 0, "01230123456789", ""},
		{[]string{"dd", "if=/data/local/tmp/a", "of=/data/local/tmp/b", "bs=0"}, 1, "", "dd: invalid number '0'\n"},
		{[]string{"chmod", "755", "/data/local/tmp/b"}, 0, "", ""},
		{[]string{"chmod", "u+x", "/data/local/tmp/b"}, 1, "", "chmod: bad mode 'u+x' (the fake phone's chmod takes octal modes)\n"},
		{[]string{"mv", "-f", "/data/local/tmp/b", "/data/local/tmp/x"}, 0, "", ""},
		{[]string{"ls", "/data/local/tmp/x"}, 0, "b\ny\n", ""},
		{[]string{"rm", "/data/local/tmp/b"}, 1, "", "rm: /data/local/tmp/b: No such file or directory\n"},
		{[]string{"rm", "-f", "/data/local/tmp/b"}, 0, "", ""},
	}
	for _, tt := range tests {
		var o output
		code := s.run(tt.argv, &o)
		if code != tt.code || o.stdout.String() != tt.out || o.stderr.String() != tt.err {
			t.Errorf("%s = %d %q %q, want %d %q %q", strings.Join(tt.argv, " "), code, o.stdout.String(), o.stderr.String(), tt.code, tt.out, tt.err)
		}
	}
}

// TestReplacePath: the phone's /data/local/tmp in a program's arguments
// becomes the host directory where it starts a path, and only there.
func TestReplacePath(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"/data/local/tmp/droidgo/droidgo", "/H/droidgo/droidgo"},
		{"script:/data/local/tmp/droidgo/wifi.txt?pace=1ms", "script:/H/droidgo/wifi.txt?pace=1ms"},
		{"--record=/data/local/tmp/x", "--record=/H/x"},
		{"/data/local/tmpx", "/data/local/tmpx"},
		{"a/data/local/tmp/b", "a/data/local/tmp/b"},
		{"Turn on Wi-Fi", "Turn on Wi-Fi"},
	} {
		if got := replacePath(tt.in, "/data/local/tmp", "/H"); got != tt.want {
			t.Errorf("replacePath(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
