package spark

import "golang.org/x/sys/unix"

// adviseHugePages asks for transparent huge pages on an anonymous mapping;
// advisory, so a refusal is fine.
func adviseHugePages(b []byte) { _ = unix.Madvise(b, unix.MADV_HUGEPAGE) }
