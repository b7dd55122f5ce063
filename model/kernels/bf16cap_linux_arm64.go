//go:build !purego

package kernels

import (
	"encoding/binary"
	"os"
)

// hasBF16 reports FEAT_BF16 (BFMMLA, BFDOT), which golang.org/x/sys/cpu
// does not expose: HWCAP2_BF16 (bit 14) of AT_HWCAP2 (26) in the process's
// auxiliary vector (Linux and Android). An unreadable vector means no.
func hasBF16() bool {
	b, err := os.ReadFile("/proc/self/auxv")
	if err != nil {
		return false
	}
	for i := 0; i+16 <= len(b); i += 16 {
		if binary.LittleEndian.Uint64(b[i:]) == 26 {
			return binary.LittleEndian.Uint64(b[i+8:])&(1<<14) != 0
		}
	}
	return false
}
