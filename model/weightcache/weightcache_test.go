package weightcache

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

func needLinux(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" && runtime.GOOS != "android" {
		t.Skipf("the weights cache is Linux-only (GOOS %s)", runtime.GOOS)
	}
}

type warnings []string

func (w *warnings) add(s string) { *w = append(*w, s) }

func newCache(t *testing.T) (*Cache, *warnings) {
	w := &warnings{}
	return &Cache{Dir: filepath.Join(t.TempDir(), "weights"), Warn: w.add}, w
}

// create makes a committed entry of data under key.
func create(t *testing.T, c *Cache, key string, data []byte) {
	t.Helper()
	m, err := c.Create(key, "model.gguf", int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	copy(m.Data, data)
	if err := m.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) ^ seed
	}
	return b
}

func TestCreateCommitMap(t *testing.T) {
	needLinux(t)
	c, warned := newCache(t)
	key := Key([]byte("model"), []byte("layout"))
	data := pattern(3*4096+100, 1)
	if m, err := c.Map(key, int64(len(data))); m != nil || err != nil {
		t.Fatalf("empty cache: Map = %v, %v", m, err)
	}
	m, err := c.Create(key, "model.gguf", int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Base(m.Path), ".tmp-") {
		t.Errorf("an entry being made is named %s, want a temporary name", m.Path)
	}
	if got, _ := c.Map(key, int64(len(data))); got != nil {
		t.Error("an entry not committed is mapped")
	}
	copy(m.Data, data)
	if err := m.Commit(); err != nil {
		t.Fatal(err)
	}
	if m.Path != c.path(key) || !bytes.Equal(m.Data, data) {
		t.Errorf("after Commit: path %s, data kept %v", m.Path, bytes.Equal(m.Data, data))
	}
	m.Close()

	got, err := c.Map(key, int64(len(data)))
	if err != nil || got == nil {
		t.Fatalf("Map = %v, %v", got, err)
	}
	if !bytes.Equal(got.Data, data) {
		t.Error("mapped weights differ from those written")
	}
	got.Close()
	es, err := c.List()
	if err != nil || len(es) != 1 {
		t.Fatalf("List = %v, %v", es, err)
	}
	if e := es[0]; e.Key != key || e.Model != "model.gguf" || e.Bytes != HeaderBytes+int64(len(data)) || time.Since(e.Created) > time.Hour {
		t.Errorf("List = %+v", e)
	}
	if ents, _ := os.ReadDir(c.Dir); len(ents) != 1 {
		t.Errorf("directory holds %d files, want the entry alone", len(ents))
	}
	if n, size, err := c.Clear(); n != 1 || size != es[0].Bytes || err != nil {
		t.Errorf("Clear = %d, %d, %v", n, size, err)
	}
	if len(*warned) != 0 {
		t.Errorf("warnings: %q", *warned)
	}
}

// An entry being made and given up (Close without Commit) leaves nothing.
func TestCloseWithoutCommit(t *testing.T) {
	needLinux(t)
	c, _ := newCache(t)
	m, err := c.Create(Key([]byte("a")), "m", 5000)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(c.Dir); len(ents) != 0 {
		t.Errorf("%d files left", len(ents))
	}
	if err := m.Commit(); err == nil {
		t.Error("Commit after Close succeeded")
	}
}

// Whatever is wrong with a file under an entry's name, it is reported,
// removed and not mapped.
func TestMapRejectsDamagedEntries(t *testing.T) {
	needLinux(t)
	key := Key([]byte("x"))
	const n = 8192
	for _, tc := range []struct {
		name   string
		damage func(b []byte) []byte
		want   string
	}{
		{"truncated header", func(b []byte) []byte { return b[:100] }, "truncated"},
		{"truncated weights", func(b []byte) []byte { return b[:len(b)-1] }, "bytes long"},
		{"longer", func(b []byte) []byte { return append(b, 0) }, "bytes long"},
		{"not ours", func(b []byte) []byte { copy(b, "GGUF"); return b }, "not a droidgo"},
		{"other version", func(b []byte) []byte { binary.LittleEndian.PutUint32(b[offVersion:], 99); return b }, "version"},
		{"header bit flip", func(b []byte) []byte { b[offName] ^= 1; return b }, "checksum"},
		{"other key", func(b []byte) []byte {
			h, _ := encodeHeader(Header{Key: Key([]byte("y")), Bytes: n, Model: "m"})
			copy(b, h)
			return b
		}, "another key"},
		{"other size", func(b []byte) []byte {
			h, _ := encodeHeader(Header{Key: key, Bytes: n - 64, Model: "m"})
			copy(b, h)
			return b[:HeaderBytes+n-64]
		}, "holds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, warned := newCache(t)
			create(t, c, key, pattern(n, 3))
			p := c.path(key)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, tc.damage(b), 0o600); err != nil {
				t.Fatal(err)
			}
			m, err := c.Map(key, n)
			if m != nil || err != nil {
				t.Fatalf("Map = %v, %v; want a miss", m, err)
			}
			if len(*warned) != 1 || !strings.Contains((*warned)[0], tc.want) {
				t.Errorf("warnings %q, want one saying %q", *warned, tc.want)
			}
			if _, err := os.Stat(p); !os.IsNotExist(err) {
				t.Errorf("damaged entry not removed: %v", err)
			}
		})
	}
}

func TestBounds(t *testing.T) {
	needLinux(t)
	c, _ := newCache(t)
	c.MaxBytes = 2*HeaderBytes + 2*8192
	if _, err := c.Create(Key([]byte("big")), "m", c.MaxBytes); err == nil {
		t.Error("an entry over the bound was made")
	}
	if _, err := c.Create("../../etc/passwd", "m", 10); err == nil {
		t.Error("a key that is a path was taken")
	}
	if _, err := c.Map("ZZ", 10); err == nil {
		t.Error("Map took a bad key")
	}
	// The least recently used entries go first, never the one just made.
	keys := []string{Key([]byte("1")), Key([]byte("2")), Key([]byte("3"))}
	for i, k := range keys {
		create(t, c, k, pattern(8192, byte(i)))
		old := time.Now().Add(time.Duration(i-10) * time.Minute)
		_ = os.Chtimes(c.path(k), old, old)
		if i == 1 {
			// Mapping the first entry makes it the most recently used.
			m, err := c.Map(keys[0], 8192)
			if err != nil || m == nil {
				t.Fatalf("Map = %v, %v", m, err)
			}
			m.Close()
		}
	}
	es, _ := c.List()
	var got []string
	for _, e := range es {
		got = append(got, e.Key)
	}
	// List is most recently used first: the first was mapped last (the
	// others' times were set minutes back); the second, least recently
	// used, went when the third came.
	if want := []string{keys[0], keys[2]}; !slices.Equal(got, want) {
		t.Errorf("entries after pruning: %q, want %q", got, want)
	}
	// A stale temporary file is removed by the next commit, a fresh one kept.
	stale, fresh := filepath.Join(c.Dir, ".tmp-stale"), filepath.Join(c.Dir, ".tmp-fresh")
	os.WriteFile(stale, nil, 0o600)
	os.WriteFile(fresh, nil, 0o600)
	old := time.Now().Add(-2 * time.Hour)
	os.Chtimes(stale, old, old)
	create(t, c, keys[1], pattern(10, 9))
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Error("stale temporary file kept")
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Error("a writer's temporary file removed")
	}
}

func TestHeaderRoundTrip(t *testing.T) {
	h := Header{Key: Key([]byte("k")), Bytes: 1 << 40, Created: time.Unix(0, 1234567890123), Model: "Spark-X2.5-1.7B-Q4_K_M.gguf"}
	b, err := encodeHeader(h)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseHeader(b)
	if err != nil || got.Key != h.Key || got.Bytes != h.Bytes || !got.Created.Equal(h.Created) || got.Model != h.Model {
		t.Errorf("ParseHeader(encodeHeader(%+v)) = %+v, %v", h, got, err)
	}
	if _, err := encodeHeader(Header{Key: "nothex", Bytes: 1}); err == nil {
		t.Error("encodeHeader took a bad key")
	}
}

func FuzzParseHeader(f *testing.F) {
	good, _ := encodeHeader(Header{Key: Key([]byte("k")), Bytes: 4096, Created: time.Unix(5, 0), Model: "m.gguf"})
	f.Add(good)
	f.Add(good[:100])
	f.Add([]byte(magic))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHeader(b)
		if err != nil {
			return
		}
		// Whatever parses is a header encodeHeader can write again.
		again, err := encodeHeader(h)
		if err != nil {
			t.Fatalf("a parsed header %+v does not encode: %v", h, err)
		}
		h2, err := ParseHeader(again)
		if err != nil || h2 != h {
			t.Fatalf("re-encoded header parses to %+v, %v; want %+v", h2, err, h)
		}
	})
}
