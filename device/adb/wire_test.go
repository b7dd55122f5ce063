package adb

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"testing"
)

func TestReadShellV2(t *testing.T) {
	// The reply adb 29 gives to `echo out; echo err >&2; exit 5`.
	in := []byte{1, 4, 0, 0, 0, 'o', 'u', 't', '\n', 2, 4, 0, 0, 0, 'e', 'r', 'r', '\n', 3, 1, 0, 0, 0, 5}
	res, err := ReadShellV2(bytes.NewReader(in))
	if err != nil || string(res.Stdout) != "out\n" || string(res.Stderr) != "err\n" || res.Exit != 5 {
		t.Fatalf("ReadShellV2 = %+v, %v", res, err)
	}
	// Packets split across reads still parse.
	res, err = ReadShellV2(io.MultiReader(bytes.NewReader(in[:3]), bytes.NewReader(in[3:11]), bytes.NewReader(in[11:])))
	if err != nil || res.Exit != 5 {
		t.Fatalf("split ReadShellV2 = %+v, %v", res, err)
	}
	for _, bad := range [][]byte{in[:len(in)-1], in[:7], {3, 2, 0, 0, 0, 1, 2}, {}} {
		if _, err := ReadShellV2(bytes.NewReader(bad)); err == nil {
			t.Errorf("ReadShellV2(%v) accepted a bad stream", bad)
		}
	}
}

func FuzzReadShellV2(f *testing.F) {
	f.Add([]byte{1, 4, 0, 0, 0, 'o', 'u', 't', '\n', 3, 1, 0, 0, 0, 5})
	f.Add([]byte{1, 255, 255, 255, 255})
	f.Fuzz(func(t *testing.T, b []byte) {
		res, err := ReadShellV2(bytes.NewReader(b))
		if err == nil && (res.Exit < 0 || res.Exit > 255) {
			t.Fatalf("exit %d", res.Exit)
		}
		if len(res.Stdout)+len(res.Stderr) > len(b) {
			t.Fatal("more output than input")
		}
	})
}

// rw is a sync stream whose replies are fixed bytes.
type rw struct {
	io.Reader
	sent bytes.Buffer
}

func (r *rw) Write(p []byte) (int, error) { return r.sent.Write(p) }

func TestSyncRecvAndStat(t *testing.T) {
	reply := append([]byte("DATA\x03\x00\x00\x00abc"), []byte("DATA\x01\x00\x00\x00dDONE\x00\x00\x00\x00")...)
	s := &rw{Reader: bytes.NewReader(reply)}
	data, err := syncRecv(s, "/sdcard/x")
	if err != nil || string(data) != "abcd" {
		t.Fatalf("syncRecv = %q, %v", data, err)
	}
	if got := s.sent.String(); got != "RECV\x09\x00\x00\x00/sdcard/x" {
		t.Errorf("request %q", got)
	}
	s = &rw{Reader: bytes.NewReader([]byte("FAIL\x05\x00\x00\x00nope!"))}
	var se *SyncError
	if _, err := syncRecv(s, "/x"); !errors.As(err, &se) || se.Msg != "nope!" {
		t.Errorf("syncRecv FAIL = %v", err)
	}
	zero := append([]byte("STAT"), make([]byte, 12)...)
	if _, err := syncStat(&rw{Reader: bytes.NewReader(zero)}, "/x", false); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("STAT of a missing file = %v, want fs.ErrNotExist", err)
	}
	sta2 := append([]byte("STA2\x02\x00\x00\x00"), make([]byte, 64)...)
	if _, err := syncStat(&rw{Reader: bytes.NewReader(sta2)}, "/x", true); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("STA2 ENOENT = %v, want fs.ErrNotExist", err)
	}
}

func FuzzSyncRecv(f *testing.F) {
	f.Add([]byte("DATA\x03\x00\x00\x00abcDONE\x00\x00\x00\x00"))
	f.Add([]byte("FAIL\xff\xff\xff\xff"))
	f.Add([]byte("DATA\xff\xff\xff\x7f"))
	f.Fuzz(func(t *testing.T, b []byte) {
		data, err := syncRecv(&rw{Reader: bytes.NewReader(b)}, "/p")
		if err == nil && len(data) > len(b) {
			t.Fatal("more data than input")
		}
	})
}

func TestReadHex4(t *testing.T) {
	for in, want := range map[string]string{"0003abc": "abc", "0000": "", "000Axxxxxxxxxx": "xxxxxxxxxx"} {
		got, err := readHex4(bytes.NewReader([]byte(in)))
		if err != nil || string(got) != want {
			t.Errorf("readHex4(%q) = %q, %v", in, got, err)
		}
	}
	for _, in := range []string{"00", "zzzz", "0005ab", "-001"} {
		if _, err := readHex4(bytes.NewReader([]byte(in))); err == nil {
			t.Errorf("readHex4(%q) accepted", in)
		}
	}
}
