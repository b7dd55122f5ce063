//go:build !purego

package kernels

import "golang.org/x/sys/unix"

// hasBF16 reports FEAT_BF16 (BFMMLA, BFDOT), which golang.org/x/sys/cpu
// does not expose, from the sysctl Apple documents for it.
func hasBF16() bool {
	v, err := unix.SysctlUint32("hw.optional.arm.FEAT_BF16")
	return err == nil && v == 1
}
