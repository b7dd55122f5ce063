package cachedir

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestBase(t *testing.T) {
	exe := func() (string, error) { return "/data/local/tmp/droidgo/droidgo", nil }
	for _, tc := range []struct {
		goos string
		env  map[string]string
		want string
	}{
		{"linux", map[string]string{"XDG_CACHE_HOME": "/x", "HOME": "/h"}, "/x/droidgo"},
		{"linux", map[string]string{"HOME": "/h"}, "/h/.cache/droidgo"},
		{"android", map[string]string{"HOME": "/"}, "/data/local/tmp/droidgo/cache"},
		{"android", map[string]string{}, "/data/local/tmp/droidgo/cache"},
		{"android", map[string]string{"HOME": "/data/data/com.termux/files/home"}, "/data/data/com.termux/files/home/.cache/droidgo"},
		{"android", map[string]string{"XDG_CACHE_HOME": "/x", "HOME": "/"}, "/x/droidgo"},
	} {
		if got := base(func(k string) string { return tc.env[k] }, tc.goos, exe); got != tc.want {
			t.Errorf("%s %v: %s, want %s", tc.goos, tc.env, got, tc.want)
		}
	}
}

// A file's identity changes with its size, its modification time and
// its first and last MiB, and only with them.
func TestIdentity(t *testing.T) {
	dir := t.TempDir()
	const size = 3<<20 + 5
	base := bytes.Repeat([]byte{7}, size)
	at := time.Unix(1700000000, 0)
	id := func(data []byte, mtime time.Time) []byte {
		p := filepath.Join(dir, "f")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		fi, _ := f.Stat()
		return Identity(fi, f)
	}
	with := func(i int) []byte {
		b := bytes.Clone(base)
		b[i] ^= 1
		return b
	}
	want := id(base, at)
	for _, tc := range []struct {
		name    string
		data    []byte
		mtime   time.Time
		changes bool
	}{
		{"same", base, at, false},
		{"modified later", base, at.Add(time.Second), true},
		{"first MiB", with(100), at, true},
		{"last MiB", with(size - 1), at, true},
		{"middle", with(size / 2), at, false},
		{"longer", append(bytes.Clone(base), 7), at, true},
	} {
		if got := id(tc.data, tc.mtime); bytes.Equal(got, want) == tc.changes || len(got) != 32 {
			t.Errorf("%s: identity %x, the original's %x (should change: %v)", tc.name, got, want, tc.changes)
		}
	}
	if got := id([]byte("small"), at); len(got) != 32 {
		t.Errorf("a small file's identity is %x", got)
	}
}
