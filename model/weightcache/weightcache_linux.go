package weightcache

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Supported: Linux (and Android) map shared files and reserve their blocks.
const Supported = true

func mapEntry(p, key string, n int64) (*Mapping, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	head := make([]byte, HeaderBytes)
	if _, err := f.ReadAt(head, 0); err != nil {
		return nil, badEntry{"truncated header"}
	}
	h, err := ParseHeader(head)
	if err != nil {
		return nil, badEntry{err.Error()}
	}
	if err := checkEntry(h, fi.Size(), key, n); err != nil {
		return nil, err
	}
	if int64(int(fi.Size())) != fi.Size() {
		return nil, fmt.Errorf("%s: too large to map", p)
	}
	// The size was checked on the open file, and entries are only ever
	// renamed into place or removed, never truncated: every mapped page
	// exists.
	b, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", p, err)
	}
	return &Mapping{Data: b[HeaderBytes:], Path: p, unmap: func() error { return unix.Munmap(b) }}, nil
}

func createEntry(f *os.File, head []byte, n int64) (*Mapping, error) {
	size := HeaderBytes + n
	if int64(int(size)) != size {
		return nil, fmt.Errorf("an entry of %d bytes is too large to map", size)
	}
	// Reserved blocks: a store to a shared mapping of a sparse file on a
	// full disk would kill the process (SIGBUS) instead of failing.
	if err := unix.Fallocate(int(f.Fd()), 0, 0, size); err != nil {
		return nil, fmt.Errorf("reserve %d bytes: %w", size, err)
	}
	if _, err := f.WriteAt(head, 0); err != nil {
		return nil, err
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map: %w", err)
	}
	return &Mapping{Data: b[HeaderBytes:], unmap: func() error { return unix.Munmap(b) }}, nil
}

func freeBytes(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
