//go:build unix

package mmap

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps shared, so the page cache backs the weights and several
// processes share them.
func mapFile(f *os.File, size int) ([]byte, func() error, error) {
	b, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return b, func() error { return unix.Munmap(b) }, nil
}
