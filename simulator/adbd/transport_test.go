package adbd

import (
	"bytes"
	"testing"
)

func TestMessageRoundTrip(t *testing.T) {
	m := message{cmd: cmdWRTE, arg0: 7, arg1: 9, data: []byte("hello")}
	for _, v := range []uint32{versionMin, versionSkipChecksum} {
		b := encodeMessage(m, v)
		sum := uint32(b[16]) | uint32(b[17])<<8
		if v == versionMin && sum != uint32('h'+'e'+'l'+'l'+'o') {
			t.Errorf("checksum %d for version %x", sum, v)
		}
		if v == versionSkipChecksum && sum != 0 {
			t.Errorf("checksum %d sent to a peer that skips it", sum)
		}
		got, err := readMessage(bytes.NewReader(b), maxPayload)
		if err != nil || got.cmd != m.cmd || got.arg0 != 7 || got.arg1 != 9 || string(got.data) != "hello" {
			t.Errorf("round trip = %+v, %v", got, err)
		}
	}
	b := encodeMessage(m, versionSkipChecksum)
	b[20] ^= 1
	if _, err := readMessage(bytes.NewReader(b), maxPayload); err == nil {
		t.Error("bad magic accepted")
	}
	b = encodeMessage(m, versionSkipChecksum)
	if _, err := readMessage(bytes.NewReader(b), 4); err == nil {
		t.Error("payload over the limit accepted")
	}
	if _, err := readMessage(bytes.NewReader(b[:26]), maxPayload); err == nil {
		t.Error("truncated payload accepted")
	}
}

func FuzzReadMessage(f *testing.F) {
	f.Add(encodeMessage(message{cmd: cmdCNXN, arg0: versionSkipChecksum, arg1: maxPayload, data: []byte("host::")}, versionMin))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := readMessage(bytes.NewReader(b), 1<<16)
		if err == nil && len(m.data) > 1<<16 {
			t.Fatal("oversized payload")
		}
	})
}
