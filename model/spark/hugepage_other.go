//go:build unix && !linux

package spark

// adviseHugePages does nothing where MADV_HUGEPAGE does not exist.
func adviseHugePages([]byte) {}
