//go:build !linux

package weightcache

import "os"

// Supported: the cache needs fallocate and shared file mappings as Linux
// has them.
const Supported = false

func mapEntry(string, string, int64) (*Mapping, error) { return nil, ErrUnsupported }

func createEntry(*os.File, []byte, int64) (*Mapping, error) { return nil, ErrUnsupported }

func freeBytes(string) (int64, error) { return 0, ErrUnsupported }

func syncDir(string) {}
