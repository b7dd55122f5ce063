package adbd

import (
	"path"
	"sort"
	"strings"
	"sync"
	"time"
)

// memFS is the fake device's file system: flat paths to contents, with
// directories recorded explicitly.
type memFS struct {
	mu    sync.Mutex
	files map[string]*memFile
}

type memFile struct {
	data  []byte
	mode  uint32 // permission bits
	mtime time.Time
	dir   bool
}

const (
	sIFREG = 0o100000
	sIFDIR = 0o040000
)

func newMemFS() *memFS {
	fs := &memFS{files: map[string]*memFile{}}
	for _, d := range []string{"/", "/sdcard", "/sdcard/Download", "/data", "/data/local", "/data/local/tmp", "/system", "/system/bin"} {
		fs.files[d] = &memFile{dir: true, mode: 0o771, mtime: time.Now()}
	}
	return fs
}

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

func (fs *memFS) get(p string) (memFile, bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f, ok := fs.files[clean(p)]
	if !ok {
		return memFile{}, false
	}
	return *f, true
}

// write stores a file, creating its parent directories.
func (fs *memFS) write(p string, data []byte, mode uint32) bool {
	p = clean(p)
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if f, ok := fs.files[p]; ok && f.dir {
		return false
	}
	for d := path.Dir(p); ; d = path.Dir(d) {
		if f, ok := fs.files[d]; ok {
			if !f.dir {
				return false
			}
		} else {
			fs.files[d] = &memFile{dir: true, mode: 0o771, mtime: time.Now()}
		}
		if d == "/" {
			break
		}
	}
	fs.files[p] = &memFile{data: append([]byte(nil), data...), mode: mode & 0o777, mtime: time.Now()}
	return true
}

func (fs *memFS) remove(p string) bool {
	p = clean(p)
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f, ok := fs.files[p]
	if !ok || f.dir {
		return false
	}
	delete(fs.files, p)
	return true
}

// list returns the names directly inside dir, sorted.
func (fs *memFS) list(dir string) ([]string, bool) {
	dir = clean(dir)
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if f, ok := fs.files[dir]; !ok || !f.dir {
		return nil, false
	}
	prefix := strings.TrimSuffix(dir, "/") + "/"
	var names []string
	for p := range fs.files {
		if p != dir && strings.HasPrefix(p, prefix) && !strings.Contains(p[len(prefix):], "/") {
			names = append(names, p[len(prefix):])
		}
	}
	sort.Strings(names)
	return names, true
}

// statMode returns the full st_mode of f.
func statMode(f memFile) uint32 {
	if f.dir {
		return sIFDIR | f.mode
	}
	return sIFREG | f.mode
}
