// Package weightcache keeps the weights the engine lays out anew at load
// (the interleaved copy kernels.Repack makes) in files, so that a new
// process maps them from the page cache instead of copying them into fresh
// memory.
//
// Fresh memory is not free: every page must be faulted in and zeroed, and
// on a virtual machine whose host takes freed memory back (balloon free page
// reporting: a couple of seconds after a process exits) each of those
// faults goes through the host too. There, copying the 1.1 GB of the 1.7B
// Q4_K_M file took 8-15 s in the first run after a pause against 0.4-1 s
// right after another run; mapping this package's file takes milliseconds,
// and the page cache pages are shared by every process using the model and
// dropped and read back under memory pressure rather than swapped.
//
// An entry is one file named by its key, a hash of everything its bytes
// depend on (the source model file's identity, the layout and every matrix
// in it, the format version; the caller builds it with Key). It is written
// under a temporary name, synced, and renamed, so a name holds only whole
// entries; it is mapped only if its header (magic, version, key, size,
// header checksum) holds and the file is exactly as long as the header
// says, anything else is reported, removed and rebuilt. Like the model file
// itself, the weights are not checksummed at every load (that would read all
// of them). The directory is bounded in total size, the least recently used
// entries removed first.
package weightcache

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/droidgo/droidgo/internal/cachedir"
)

// Version is the file format's version; it is part of every key too.
const Version = 1

// DefaultMaxBytes bounds the directory when Cache.MaxBytes is 0: room for
// the 1.7B's Q4_K_M and Q8_0 copies together.
const DefaultMaxBytes = 4 << 30

// HeaderBytes is the header's size; the weights start right after it, on
// a page boundary.
const HeaderBytes = 4096

// freeReserve is the disk space an entry must leave free.
const freeReserve = 1 << 30

const (
	magic   = "DGWEIGHT"
	suffix  = ".weights"
	maxName = 1024
)

// Dir returns the cache directory: $XDG_CACHE_HOME/droidgo/weights, else
// ~/.cache/droidgo/weights.
func Dir(getenv func(string) string) string {
	return filepath.Join(cachedir.Base(getenv), "weights")
}

// Key hashes the parts (length-prefixed, so no two lists collide) with the
// format version into an entry's key.
func Key(parts ...[]byte) string {
	return cachedir.Key(fmt.Sprintf("droidgo weights cache v%d\n", Version), parts...)
}

// Cache is a weights-cache directory.
type Cache struct {
	Dir string
	// MaxBytes bounds the directory's entries (0: DefaultMaxBytes).
	MaxBytes int64
	// Warn, if set, is told about entries found damaged and removed, and
	// why an entry could not be made.
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

// Header is what an entry's first HeaderBytes hold.
type Header struct {
	Key     string    // hex, 64 digits
	Bytes   int64     // the weights' bytes after the header
	Created time.Time // when the entry was written
	Model   string    // the source file's base name, for listings
}

// header layout: magic, version u32, key [32]byte, bytes u64, created
// (Unix ns) i64, model name length u16 and bytes, zeros, and the SHA-256
// of everything before it in the last 32 bytes.
const (
	offVersion = len(magic)
	offKey     = offVersion + 4
	offBytes   = offKey + 32
	offCreated = offBytes + 8
	offNameLen = offCreated + 8
	offName    = offNameLen + 2
	offSum     = HeaderBytes - sha256.Size
)

// encodeHeader writes h into a HeaderBytes block.
func encodeHeader(h Header) ([]byte, error) {
	k, err := hex.DecodeString(h.Key)
	if err != nil || len(k) != 32 {
		return nil, fmt.Errorf("bad key %q", h.Key)
	}
	if h.Bytes < 0 {
		return nil, fmt.Errorf("bad size %d", h.Bytes)
	}
	name := h.Model
	if len(name) > maxName {
		name = name[:maxName]
	}
	b := make([]byte, HeaderBytes)
	copy(b, magic)
	binary.LittleEndian.PutUint32(b[offVersion:], Version)
	copy(b[offKey:], k)
	binary.LittleEndian.PutUint64(b[offBytes:], uint64(h.Bytes))
	binary.LittleEndian.PutUint64(b[offCreated:], uint64(h.Created.UnixNano()))
	binary.LittleEndian.PutUint16(b[offNameLen:], uint16(len(name)))
	copy(b[offName:], name)
	sum := sha256.Sum256(b[:offSum])
	copy(b[offSum:], sum[:])
	return b, nil
}

// ParseHeader checks an entry's header block (at least HeaderBytes; more is
// ignored) and returns what it holds.
func ParseHeader(b []byte) (Header, error) {
	var h Header
	if len(b) < HeaderBytes {
		return h, errors.New("truncated header")
	}
	b = b[:HeaderBytes]
	if !bytes.HasPrefix(b, []byte(magic)) {
		return h, errors.New("not a droidgo weights cache file")
	}
	if v := binary.LittleEndian.Uint32(b[offVersion:]); v != Version {
		return h, fmt.Errorf("format version %d, not %d", v, Version)
	}
	if sum := sha256.Sum256(b[:offSum]); !bytes.Equal(sum[:], b[offSum:]) {
		return h, errors.New("header checksum mismatch")
	}
	n := binary.LittleEndian.Uint64(b[offBytes:])
	if n > 1<<50 {
		return h, fmt.Errorf("implausible size %d", n)
	}
	nl := int(binary.LittleEndian.Uint16(b[offNameLen:]))
	if nl > maxName {
		return h, fmt.Errorf("model name of %d bytes", nl)
	}
	h.Key = hex.EncodeToString(b[offKey : offKey+32])
	h.Bytes = int64(n)
	h.Created = time.Unix(0, int64(binary.LittleEndian.Uint64(b[offCreated:])))
	h.Model = string(b[offName : offName+nl])
	return h, nil
}

// Entry is a cache file, for listing.
type Entry struct {
	Key   string
	Path  string
	Model string // "" if the header does not parse (Map would remove it)
	Bytes int64  // the file's size
	// Created is when it was written, Used when it was last mapped.
	Created, Used time.Time
}

// List returns the entries, most recently used first.
func (c *Cache) List() ([]Entry, error) {
	fs, err := cachedir.List(c.Dir, suffix)
	if err != nil {
		return nil, fmt.Errorf("weights cache: %w", err)
	}
	var out []Entry
	for _, f := range fs {
		e := Entry{Key: f.Key, Path: f.Path, Bytes: f.Bytes, Used: f.Used}
		if h, err := readHeader(f.Path); err == nil {
			e.Model, e.Created = h.Model, h.Created
		}
		out = append(out, e)
	}
	return out, nil
}

// readHeader reads and parses the header of the file at p.
func readHeader(p string) (Header, error) {
	f, err := os.Open(p)
	if err != nil {
		return Header{}, err
	}
	defer f.Close()
	b := make([]byte, HeaderBytes)
	if _, err := f.ReadAt(b, 0); err != nil {
		return Header{}, errors.New("truncated header")
	}
	return ParseHeader(b)
}

// Clear removes every entry (a process that maps one keeps its pages until
// it ends) and returns how many and their bytes.
func (c *Cache) Clear() (int, int64, error) {
	es, err := c.List()
	if err != nil {
		return 0, 0, err
	}
	n, size := 0, int64(0)
	for _, e := range es {
		if err := os.Remove(e.Path); err != nil && !os.IsNotExist(err) {
			return n, size, fmt.Errorf("weights cache: %w", err)
		}
		n++
		size += e.Bytes
	}
	return n, size, nil
}

// Mapping is an entry's weights mapped into memory: read-only for Map,
// writable until Commit for Create.
type Mapping struct {
	// Data are the weights, Bytes long, page-aligned.
	Data []byte
	// Path is the entry's file (a temporary name until Commit).
	Path string

	c      *Cache
	key    string
	file   *os.File // Create's, until Commit or Close
	unmap  func() error
	closed bool
}

// ErrUnsupported is Create's and Map's error where this platform has no
// cache (no mmap of a shared file, or no way to reserve its blocks).
var ErrUnsupported = errors.New("weights cache: not supported on this platform")

// Map maps the entry for key if there is a whole one of n bytes. A missing
// entry is (nil, nil); a damaged, truncated or foreign one is reported
// through Warn, removed, and (nil, nil) too.
func (c *Cache) Map(key string, n int64) (*Mapping, error) {
	if !Supported {
		return nil, ErrUnsupported
	}
	if !cachedir.ValidKey(key) {
		return nil, fmt.Errorf("weights cache: bad key %q", key)
	}
	p := c.path(key)
	m, err := mapEntry(p, key, n)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	var bad badEntry
	if errors.As(err, &bad) {
		c.warn("weights cache file %s ignored (%s); it will be rebuilt", filepath.Base(p), bad.why)
		_ = os.Remove(p)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("weights cache: %w", err)
	}
	m.c, m.key = c, key
	// The modification time orders eviction: a used entry is recent.
	now := time.Now()
	_ = os.Chtimes(p, now, now)
	return m, nil
}

// badEntry is mapEntry's error for a file that is not a whole entry of
// the key and size asked for.
type badEntry struct{ why string }

func (e badEntry) Error() string { return e.why }

// checkEntry is the rule a file of size bytes with header h must meet to
// be the entry of key with n bytes of weights.
func checkEntry(h Header, size int64, key string, n int64) error {
	switch {
	case h.Key != key:
		return badEntry{"written for another key"}
	case h.Bytes != n:
		return badEntry{fmt.Sprintf("holds %d bytes of weights, not %d", h.Bytes, n)}
	case size != HeaderBytes+n:
		return badEntry{fmt.Sprintf("%d bytes long, not %d", size, HeaderBytes+n)}
	}
	return nil
}

// Create starts the entry for key: a file of n bytes of weights (its
// blocks reserved, so writing the mapping cannot fail for want of space),
// mapped writable, under a temporary name until Commit. It refuses when
// the entry alone exceeds the bound or the disk would keep less than 1 GiB
// free.
func (c *Cache) Create(key, model string, n int64) (*Mapping, error) {
	if !Supported {
		return nil, ErrUnsupported
	}
	if !cachedir.ValidKey(key) {
		return nil, fmt.Errorf("weights cache: bad key %q", key)
	}
	if HeaderBytes+n > c.max() {
		return nil, fmt.Errorf("weights cache: an entry of %d bytes exceeds the bound of %d", HeaderBytes+n, c.max())
	}
	head, err := encodeHeader(Header{Key: key, Bytes: n, Created: time.Now(), Model: model})
	if err != nil {
		return nil, fmt.Errorf("weights cache: %w", err)
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("weights cache: %w", err)
	}
	if free, err := freeBytes(c.Dir); err == nil && free < HeaderBytes+n+freeReserve {
		return nil, fmt.Errorf("weights cache: %s has %d bytes free, an entry of %d would leave less than 1 GiB", c.Dir, free, HeaderBytes+n)
	}
	f, err := os.CreateTemp(c.Dir, cachedir.TempPrefix+key[:16]+"-*")
	if err != nil {
		return nil, fmt.Errorf("weights cache: %w", err)
	}
	m, err := createEntry(f, head, n)
	if err != nil {
		f.Close()
		_ = os.Remove(f.Name())
		return nil, fmt.Errorf("weights cache: %w", err)
	}
	m.c, m.key, m.file, m.Path = c, key, f, f.Name()
	return m, nil
}

// Commit makes a created entry whole: its bytes synced to disk, then renamed
// to its key's name, then the directory pruned to its bound. Data stays
// mapped (read and write) until Close.
func (m *Mapping) Commit() error {
	if m.file == nil {
		return errors.New("weights cache: commit of an entry not being created")
	}
	f := m.file
	err := f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	m.file = nil
	final := m.c.path(m.key)
	if err == nil {
		err = os.Rename(f.Name(), final)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("weights cache: %w", err)
	}
	m.Path = final
	syncDir(m.c.Dir)
	return cachedir.Prune(m.c.Dir, suffix, m.key, m.c.max())
}

// Close unmaps the weights; an entry created and not committed is removed.
func (m *Mapping) Close() error {
	if m == nil || m.closed {
		return nil
	}
	m.closed = true
	err := m.unmap()
	if m.file != nil {
		m.file.Close()
		_ = os.Remove(m.file.Name())
		m.file = nil
	}
	return err
}
