package deploy

import "testing"

func TestParseDF(t *testing.T) {
	tests := []struct {
		out  string
		want int64
		bad  bool
	}{
		// toybox on Android 14
		{"Filesystem      1K-blocks     Used Available Use% Mounted on\n/dev/block/dm-46 115095092 55234052  59729968  49% /data\n", 59729968 * 1024, false},
		// coreutils, with a pty's line ends
		{"Filesystem     1K-blocks    Used Avail Use% Mounted on\r\n/dev/sda1       1000000  400000 600000  40% /\r\n", 600000 * 1024, false},
		{"df: /x: No such file or directory\n", 0, true},
		{"Filesystem 1K-blocks Used Available Use% Mounted on\n/dev/x 1 2 lots 3% /\n", 0, true},
		{"Filesystem Size Mounted\n/dev/x 1 /\n", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseDF(tt.out)
		if (err != nil) != tt.bad || got != tt.want {
			t.Errorf("ParseDF(%q) = %d, %v; want %d (error %v)", tt.out, got, err, tt.want, tt.bad)
		}
	}
}

func FuzzParseDF(f *testing.F) {
	f.Add("Filesystem      1K-blocks     Used Available Use% Mounted on\n/dev/block/dm-46 115095092 55234052  59729968  49% /data\n")
	f.Fuzz(func(t *testing.T, out string) {
		if n, err := ParseDF(out); err == nil && n < 0 {
			t.Errorf("ParseDF(%q) = %d", out, n)
		}
	})
}
