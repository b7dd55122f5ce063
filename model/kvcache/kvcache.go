// Package kvcache keeps computed prompt prefixes (an engine's KV state) on
// disk, so that a new run loads the state of the fixed system prompt and
// tool schemas instead of recomputing it.
//
// An entry is one file named by its key, a hash of everything that changes
// the state (the model file, the exact prefix, the engine's numerics, the
// format version; the caller builds it with Key). Files are written to a
// temporary name and renamed, carry a SHA-256 of their contents, and are
// read back only if the magic, version, key, lengths and checksum all hold:
// anything else is reported, removed and rebuilt, never trusted. The
// directory is bounded in total size, the least recently used entries
// removed first.
package kvcache

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/droidgo/droidgo/internal/cachedir"
)

// Version is the file format's version; it is part of every key too.
const Version = 1

// DefaultMaxBytes bounds the directory when Cache.MaxBytes is 0.
const DefaultMaxBytes = 2 << 30

const (
	magic  = "DGKVCACH"
	suffix = ".kv"
)

// Dir returns the cache directory: $XDG_CACHE_HOME/droidgo/kv, else
// ~/.cache/droidgo/kv.
func Dir(getenv func(string) string) string {
	return filepath.Join(cachedir.Base(getenv), "kv")
}

// Key hashes the parts (length-prefixed, so no two lists collide) with the
// format version into an entry's key.
func Key(parts ...[]byte) string {
	return cachedir.Key(fmt.Sprintf("droidgo kv cache v%d\n", Version), parts...)
}

// Meta describes an entry for listing.
type Meta struct {
	Model   string    `json:"model"`
	Tokens  int       `json:"tokens"`
	KV      string    `json:"kv_type"`
	Created time.Time `json:"created"`
}

// Entry is one cached prefix.
type Entry struct {
	Key  string `json:"key"`
	Path string `json:"path"`
	Meta
	Bytes int64     `json:"bytes"`
	Used  time.Time `json:"used"`
}

// Cache is a prompt-cache directory.
type Cache struct {
	Dir string
	// MaxBytes bounds the total size of the entries (0: DefaultMaxBytes).
	MaxBytes int64
	// Warn receives one sentence per problem that did not stop the run
	// (a damaged entry, a failed write); nil drops them.
	Warn func(string)
}

func (c *Cache) warn(format string, args ...any) {
	if c.Warn != nil {
		c.Warn(fmt.Sprintf(format, args...))
	}
}

func (c *Cache) max() int64 {
	if c.MaxBytes > 0 {
		return c.MaxBytes
	}
	return DefaultMaxBytes
}

func (c *Cache) path(key string) string { return filepath.Join(c.Dir, key+suffix) }

// Load returns the payload stored under key. A missing entry is a miss; a
// damaged, truncated or foreign one is reported through Warn, removed, and
// a miss.
func (c *Cache) Load(key string) ([]byte, bool) {
	if !cachedir.ValidKey(key) {
		return nil, false
	}
	p := c.path(key)
	fi, err := os.Stat(p)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			c.warn("prompt cache %s: %v", p, err)
		}
		return nil, false
	}
	if fi.Size() > c.max() {
		c.discard(p, "larger than the cache's bound")
		return nil, false
	}
	data, err := os.ReadFile(p)
	if err != nil {
		c.warn("prompt cache %s: %v", p, err)
		return nil, false
	}
	_, payload, err := parse(data, key)
	if err != nil {
		c.discard(p, err.Error())
		return nil, false
	}
	// The modification time orders eviction: a used entry is recent.
	now := time.Now()
	_ = os.Chtimes(p, now, now)
	return payload, true
}

func (c *Cache) discard(p, why string) {
	c.warn("prompt cache file %s ignored (%s); it will be rebuilt", filepath.Base(p), why)
	_ = os.Remove(p)
}

// parse checks a file's bytes and returns its meta and payload.
func parse(data []byte, key string) (Meta, []byte, error) {
	var m Meta
	const head = len(magic) + 4 + 32 + 4
	if len(data) < head+8+sha256.Size {
		return m, nil, errors.New("truncated")
	}
	body, sum := data[:len(data)-sha256.Size], data[len(data)-sha256.Size:]
	if !bytes.HasPrefix(data, []byte(magic)) {
		return m, nil, errors.New("not a droidgo prompt cache file")
	}
	if v := binary.LittleEndian.Uint32(data[len(magic):]); v != Version {
		return m, nil, fmt.Errorf("format version %d, not %d", v, Version)
	}
	k := data[len(magic)+4 : len(magic)+36]
	if key != "" && hex.EncodeToString(k) != key {
		return m, nil, errors.New("written for another key")
	}
	want := sha256.Sum256(body)
	if !bytes.Equal(want[:], sum) {
		return m, nil, errors.New("checksum mismatch")
	}
	rest := body[len(magic)+36:]
	ml := uint64(binary.LittleEndian.Uint32(rest))
	rest = rest[4:]
	if ml > uint64(len(rest)) {
		return m, nil, errors.New("truncated")
	}
	if err := json.Unmarshal(rest[:ml], &m); err != nil {
		return m, nil, fmt.Errorf("bad description: %v", err)
	}
	rest = rest[ml:]
	if len(rest) < 8 {
		return m, nil, errors.New("truncated")
	}
	pl := binary.LittleEndian.Uint64(rest)
	rest = rest[8:]
	if pl != uint64(len(rest)) {
		return m, nil, errors.New("truncated")
	}
	return m, rest, nil
}

// Store writes payload under key, atomically, then removes the least
// recently used entries until the directory fits MaxBytes. A payload that
// alone exceeds the bound is not stored.
func (c *Cache) Store(key string, meta Meta, payload []byte) error {
	if !cachedir.ValidKey(key) {
		return fmt.Errorf("prompt cache: bad key %q", key)
	}
	mj, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	k, _ := hex.DecodeString(key)
	var buf bytes.Buffer
	buf.WriteString(magic)
	_ = binary.Write(&buf, binary.LittleEndian, uint32(Version))
	buf.Write(k)
	_ = binary.Write(&buf, binary.LittleEndian, uint32(len(mj)))
	buf.Write(mj)
	_ = binary.Write(&buf, binary.LittleEndian, uint64(len(payload)))
	buf.Write(payload)
	sum := sha256.Sum256(buf.Bytes())
	buf.Write(sum[:])
	if int64(buf.Len()) > c.max() {
		return fmt.Errorf("prompt cache: an entry of %d bytes exceeds the bound of %d", buf.Len(), c.max())
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return fmt.Errorf("prompt cache: %w", err)
	}
	tmp, err := os.CreateTemp(c.Dir, cachedir.TempPrefix+key[:16]+"-*")
	if err != nil {
		return fmt.Errorf("prompt cache: %w", err)
	}
	_, werr := tmp.Write(buf.Bytes())
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), c.path(key))
	}
	if werr != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("prompt cache: %w", werr)
	}
	return c.prune(key)
}

// prune removes the oldest entries (and stale temporary files) beyond the
// bound, never keep.
func (c *Cache) prune(keep string) error {
	return cachedir.Prune(c.Dir, suffix, keep, c.max())
}

// List returns the entries, most recently used first. Files that do not
// parse are listed with an empty Meta (Load would discard them).
func (c *Cache) List() ([]Entry, error) {
	fs, err := cachedir.List(c.Dir, suffix)
	if err != nil {
		return nil, fmt.Errorf("prompt cache: %w", err)
	}
	var out []Entry
	for _, f := range fs {
		out = append(out, Entry{Key: f.Key, Path: f.Path, Bytes: f.Bytes, Used: f.Used, Meta: readMeta(f.Path)})
	}
	return out, nil
}

// readMeta reads an entry's description from its header, without
// checking the rest of the file (Load does).
func readMeta(p string) Meta {
	var m Meta
	f, err := os.Open(p)
	if err != nil {
		return m
	}
	defer f.Close()
	head := make([]byte, len(magic)+40)
	if _, err := io.ReadFull(f, head); err != nil || !bytes.HasPrefix(head, []byte(magic)) {
		return m
	}
	ml := binary.LittleEndian.Uint32(head[len(magic)+36:])
	if ml > 1<<16 {
		return m
	}
	mj := make([]byte, ml)
	if _, err := io.ReadFull(f, mj); err != nil {
		return m
	}
	_ = json.Unmarshal(mj, &m)
	return m
}

// Clear removes every entry and returns how many files and bytes went.
func (c *Cache) Clear() (int, int64, error) {
	es, err := c.List()
	if err != nil {
		return 0, 0, err
	}
	n, size := 0, int64(0)
	for _, e := range es {
		if err := os.Remove(e.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return n, size, fmt.Errorf("prompt cache: %w", err)
		}
		n++
		size += e.Bytes
	}
	return n, size, nil
}
