package adbd

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// diskFS is the fake device's file system: the phone's paths under a
// directory of this machine, so that a program the fake runs (a pushed
// droidgo under qemu) reads and writes the same files as its shell and
// sync services.
type diskFS struct {
	root string
	// own says the directory is the fake's to remove on Close.
	own bool
}

// fileInfo is what the sync service and the shell's tools need of a file.
type fileInfo struct {
	size  int64
	mode  uint32 // permission bits
	mtime time.Time
	dir   bool
}

const (
	sIFREG = 0o100000
	sIFDIR = 0o040000
)

// phoneDirs exist on every fake phone.
var phoneDirs = []string{"/sdcard", "/sdcard/Download", "/data/local/tmp", "/system/bin"}

// newDiskFS serves the directory root (a new temporary one when root is
// "") as the phone's file system.
func newDiskFS(root string) (*diskFS, error) {
	d := &diskFS{root: root}
	if root == "" {
		dir, err := os.MkdirTemp("", "droidgo-fake-phone-")
		if err != nil {
			return nil, err
		}
		d.root, d.own = dir, true
	}
	for _, p := range phoneDirs {
		if err := os.MkdirAll(d.host(p), 0o771); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// clean returns the phone path p made absolute and clean, with the
// aliases of /sdcard replaced by /sdcard.
func clean(p string) string {
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	p = path.Clean(p)
	// /storage/emulated/0 and /storage/self/primary are /sdcard.
	for _, alias := range []string{"/storage/emulated/0", "/storage/self/primary", "/mnt/sdcard"} {
		if p == alias || strings.HasPrefix(p, alias+"/") {
			p = "/sdcard" + p[len(alias):]
		}
	}
	return p
}

// host is the file of this machine that holds the phone's path p. Clean
// paths cannot climb out of root.
func (d *diskFS) host(p string) string {
	return filepath.Join(d.root, filepath.FromSlash(clean(p)))
}

func (d *diskFS) get(p string) (fileInfo, bool) {
	st, err := os.Stat(d.host(p))
	if err != nil {
		return fileInfo{}, false
	}
	return fileInfo{size: st.Size(), mode: uint32(st.Mode().Perm()), mtime: st.ModTime(), dir: st.IsDir()}, true
}

// read returns a regular file's contents.
func (d *diskFS) read(p string) ([]byte, error) {
	if f, ok := d.get(p); ok && f.dir {
		return nil, syscall.EISDIR
	}
	return os.ReadFile(d.host(p))
}

// write stores a file, creating its parent directories.
func (d *diskFS) write(p string, data []byte, mode uint32) bool {
	h := d.host(p)
	if f, ok := d.get(p); ok && f.dir {
		return false
	}
	if os.MkdirAll(filepath.Dir(h), 0o771) != nil {
		return false
	}
	if os.WriteFile(h, data, d.perm(mode)) != nil {
		return false
	}
	return os.Chmod(h, d.perm(mode)) == nil
}

// perm keeps the owner able to read and write what the fake stores: the
// phone's files are this user's files.
func (d *diskFS) perm(mode uint32) os.FileMode { return os.FileMode(mode&0o777 | 0o600) }

// place closes tmp, a file under root, and moves it to the phone's path
// p with permissions mode, creating p's parent directories.
func (d *diskFS) place(tmp *os.File, p string, mode uint32) error {
	if err := tmp.Close(); err != nil {
		return err
	}
	if f, ok := d.get(p); ok && f.dir {
		return syscall.EISDIR
	}
	h := d.host(p)
	if err := os.MkdirAll(filepath.Dir(h), 0o771); err != nil {
		return syscall.ENOTDIR
	}
	if err := os.Chmod(tmp.Name(), d.perm(mode)); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), h)
}

func (d *diskFS) remove(p string) bool {
	if f, ok := d.get(p); !ok || f.dir {
		return false
	}
	return os.Remove(d.host(p)) == nil
}

// list returns the names directly inside dir, sorted.
func (d *diskFS) list(dir string) ([]string, bool) {
	ents, err := os.ReadDir(d.host(dir))
	if err != nil {
		return nil, false
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names, true
}

func (d *diskFS) mkdirAll(p string) error {
	err := os.MkdirAll(d.host(p), 0o771)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// close removes the directory if the fake made it.
func (d *diskFS) close() {
	if d.own {
		os.RemoveAll(d.root)
	}
}

// statMode returns the full st_mode of f.
func statMode(f fileInfo) uint32 {
	if f.dir {
		return sIFDIR | f.mode
	}
	return sIFREG | f.mode
}
