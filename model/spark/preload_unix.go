//go:build unix

package spark

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// allocAnon maps n bytes of private anonymous memory outside the Go heap
// (the garbage collector neither scans it nor counts it towards its pacing).
func allocAnon(n int) ([]byte, func() error, error) {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return nil, nil, err
	}
	adviseHugePages(b)
	return b, func() error { return unix.Munmap(b) }, nil
}

// releasePages drops this process's mapping of the whole pages inside b (a
// view into a read-only file mapping), so they stop counting as resident;
// the page cache keeps them.
func releasePages(b []byte) {
	ps := uintptr(os.Getpagesize())
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo := (start + ps - 1) &^ (ps - 1)
	hi := (start + uintptr(len(b))) &^ (ps - 1)
	if hi <= lo {
		return
	}
	p := unsafe.Add(unsafe.Pointer(unsafe.SliceData(b)), lo-start)
	_ = unix.Madvise(unsafe.Slice((*byte)(p), hi-lo), unix.MADV_DONTNEED)
}
