// Package cachedir holds the rules droidgo's caches on disk share: where
// they live, how an entry's key is hashed, and how a directory is kept
// within its bound.
package cachedir

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"
)

// Base returns the directory droidgo's caches live under:
// $XDG_CACHE_HOME/droidgo, else ~/.cache/droidgo; on Android, where adb's
// shell has HOME=/ (not writable), a cache directory beside the executable
// (deploy's /data/local/tmp/droidgo/cache) when HOME is unset or /.
func Base(getenv func(string) string) string {
	return base(getenv, runtime.GOOS, os.Executable)
}

func base(getenv func(string) string, goos string, executable func() (string, error)) string {
	if b := getenv("XDG_CACHE_HOME"); b != "" {
		return filepath.Join(b, "droidgo")
	}
	home := getenv("HOME")
	if goos == "android" && (home == "" || home == "/") {
		if exe, err := executable(); err == nil {
			return filepath.Join(filepath.Dir(exe), "cache")
		}
	}
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".cache", "droidgo")
}

// Key hashes domain and the parts (each length-prefixed, so no two lists
// collide) into a key of 64 hex digits.
func Key(domain string, parts ...[]byte) string {
	h := sha256.New()
	io.WriteString(h, domain)
	for _, p := range parts {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write(p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Identity is a file's identity for cache keys: its size, modification
// time and a SHA-256 of its first and last MiB (for a model file: the
// metadata, the first tensors and the last), read from data, the file's
// contents. A file replaced or rewritten gets another identity.
func Identity(fi os.FileInfo, data io.ReaderAt) []byte {
	h := sha256.New()
	fmt.Fprintf(h, "%d %d\n", fi.Size(), fi.ModTime().UnixNano())
	const span = 1 << 20
	size := fi.Size()
	if _, err := io.Copy(h, io.NewSectionReader(data, 0, min(span, size))); err != nil {
		return nil
	}
	if size > span {
		from := max(span, size-span)
		if _, err := io.Copy(h, io.NewSectionReader(data, from, size-from)); err != nil {
			return nil
		}
	}
	return h.Sum(nil)
}

// ValidKey reports whether key has the form Key returns, 64 hex digits
// (so it is never a path).
func ValidKey(key string) bool {
	if len(key) != 64 {
		return false
	}
	_, err := hex.DecodeString(key)
	return err == nil
}

// TempPrefix starts the names of entries being written.
const TempPrefix = ".tmp-"

// staleTemp is the age after which a temporary file is taken for the
// leftover of a writer that died.
const staleTemp = time.Hour

// File is an entry file of a cache directory.
type File struct {
	Key   string
	Path  string
	Bytes int64
	Used  time.Time // modification time: set when the entry is used
}

// List returns the entries of dir named KEY+suffix, most recently used
// first (none if dir does not exist).
func List(dir, suffix string) ([]File, error) {
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []File
	for _, d := range ents {
		key, ok := strings.CutSuffix(d.Name(), suffix)
		if !ok || !ValidKey(key) || d.IsDir() {
			continue
		}
		fi, err := d.Info()
		if err != nil {
			continue
		}
		out = append(out, File{Key: key, Path: filepath.Join(dir, d.Name()), Bytes: fi.Size(), Used: fi.ModTime()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Used.After(out[j].Used) })
	return out, nil
}

// Prune removes the least recently used entries of dir (named
// KEY+suffix) until they take at most max bytes, never the entry keep,
// and the temporary files older than an hour.
func Prune(dir, suffix, keep string, max int64) error {
	es, err := List(dir, suffix)
	if err != nil {
		return err
	}
	var total int64
	for _, e := range es {
		total += e.Bytes
	}
	for i := len(es) - 1; i >= 0 && total > max; i-- {
		if es[i].Key == keep {
			continue
		}
		if err := os.Remove(es[i].Path); err == nil {
			total -= es[i].Bytes
		}
	}
	if ents, err := os.ReadDir(dir); err == nil {
		for _, d := range ents {
			if strings.HasPrefix(d.Name(), TempPrefix) {
				if fi, err := d.Info(); err == nil && time.Since(fi.ModTime()) > staleTemp {
					_ = os.Remove(filepath.Join(dir, d.Name()))
				}
			}
		}
	}
	return nil
}
