package kvcache

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func newCache(t *testing.T, max int64) (*Cache, *[]string) {
	var warns []string
	return &Cache{Dir: filepath.Join(t.TempDir(), "kv"), MaxBytes: max, Warn: func(s string) { warns = append(warns, s) }}, &warns
}

func TestStoreLoad(t *testing.T) {
	c, warns := newCache(t, 0)
	k := Key([]byte("model"), []byte("prefix"))
	if _, ok := c.Load(k); ok {
		t.Fatal("hit in an empty cache")
	}
	payload := bytes.Repeat([]byte{1, 2, 3}, 1000)
	if err := c.Store(k, Meta{Model: "m.gguf", Tokens: 7, KV: "f16"}, payload); err != nil {
		t.Fatal(err)
	}
	got, ok := c.Load(k)
	if !ok || !bytes.Equal(got, payload) {
		t.Fatalf("Load = %d bytes, %v", len(got), ok)
	}
	es, err := c.List()
	if err != nil || len(es) != 1 || es[0].Tokens != 7 || es[0].Model != "m.gguf" {
		t.Fatalf("List = %+v, %v", es, err)
	}
	if len(*warns) != 0 {
		t.Errorf("warnings: %v", *warns)
	}
	if Key([]byte("ab"), []byte("c")) == Key([]byte("a"), []byte("bc")) {
		t.Error("keys of different part lists collide")
	}
}

// A damaged file is reported, removed, and a miss; the next Store
// rebuilds it.
func TestDamagedFilesIgnored(t *testing.T) {
	k := Key([]byte("x"))
	payload := bytes.Repeat([]byte("kv"), 500)
	damage := map[string]func([]byte) []byte{
		"truncated":     func(b []byte) []byte { return b[:len(b)/2] },
		"empty":         func(b []byte) []byte { return nil },
		"flipped bit":   func(b []byte) []byte { b[len(b)/2] ^= 1; return b },
		"foreign magic": func(b []byte) []byte { copy(b, "GGUFxxxx"); return b },
		"other version": func(b []byte) []byte { b[len(magic)] = 9; return b },
		"other key":     func(b []byte) []byte { b[len(magic)+4] ^= 0xff; return b },
		"appended":      func(b []byte) []byte { return append(b, 0) },
	}
	for name, f := range damage {
		c, warns := newCache(t, 0)
		if err := c.Store(k, Meta{}, payload); err != nil {
			t.Fatal(err)
		}
		p := c.path(k)
		b, _ := os.ReadFile(p)
		if err := os.WriteFile(p, f(b), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, ok := c.Load(k); ok {
			t.Errorf("%s: damaged file loaded", name)
		}
		if len(*warns) != 1 || !strings.Contains((*warns)[0], "rebuilt") {
			t.Errorf("%s: warnings %v", name, *warns)
		}
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s: damaged file kept", name)
		}
		if err := c.Store(k, Meta{}, payload); err != nil {
			t.Fatal(err)
		}
		if got, ok := c.Load(k); !ok || !bytes.Equal(got, payload) {
			t.Errorf("%s: not rebuilt", name)
		}
	}
}

// The directory stays within its bound, least recently used out first.
func TestBoundedOldestFirst(t *testing.T) {
	c, _ := newCache(t, 3500)
	payload := make([]byte, 1000)
	keys := []string{Key([]byte("a")), Key([]byte("b")), Key([]byte("c")), Key([]byte("d"))}
	for i, k := range keys[:3] {
		if err := c.Store(k, Meta{}, payload); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(time.Duration(i-10) * time.Minute)
		_ = os.Chtimes(c.path(k), old, old)
	}
	// Using a makes b the least recently used.
	if _, ok := c.Load(keys[0]); !ok {
		t.Fatal("miss")
	}
	if err := c.Store(keys[3], Meta{}, payload); err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false, true, true} {
		if _, err := os.Stat(c.path(keys[i])); (err == nil) != want {
			t.Errorf("entry %d present = %v, want %v", i, err == nil, want)
		}
	}
	if err := c.Store(Key([]byte("big")), Meta{}, make([]byte, 5000)); err == nil {
		t.Error("an entry larger than the bound was stored")
	}
	n, _, err := c.Clear()
	if err != nil || n != 3 {
		t.Errorf("Clear = %d, %v", n, err)
	}
}

func FuzzParse(f *testing.F) {
	c := &Cache{Dir: f.TempDir()}
	k := Key([]byte("f"))
	if err := c.Store(k, Meta{Model: "m"}, []byte("payload")); err != nil {
		f.Fatal(err)
	}
	b, _ := os.ReadFile(c.path(k))
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _, _ = parse(b, k)
		_, _, _ = parse(b, "")
	})
}

// Loading a 46 MiB entry (the 1.7B's 1827-token prefix with an f16 cache):
// read, checksum, parse.
func BenchmarkLoad46MiB(b *testing.B) {
	c := &Cache{Dir: b.TempDir()}
	k := Key([]byte("bench"))
	if err := c.Store(k, Meta{}, make([]byte, 46<<20)); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(46 << 20)
	for b.Loop() {
		if _, ok := c.Load(k); !ok {
			b.Fatal("miss")
		}
	}
}
