// Package mmap maps model files into memory read-only. Where the platform
// has mmap the page cache backs the mapping, so loading costs no copy and
// several processes share the weights; elsewhere the file is read.
package mmap

import (
	"fmt"
	"os"
)

// File maps the first size bytes of f read-only. It returns the bytes and
// the function that releases them; the bytes must not be used afterwards.
// f may be closed once File returns.
func File(f *os.File, size int64) (data []byte, unmap func() error, err error) {
	if size < 0 || int64(int(size)) != size {
		return nil, nil, fmt.Errorf("a file of %d bytes is too large to map on this platform", size)
	}
	if size == 0 {
		return []byte{}, func() error { return nil }, nil
	}
	return mapFile(f, int(size))
}
