//go:build !purego

package kernels

import "syscall"

// Linux keeps the 8 KiB tile data state off until a process asks for it
// (arch/x86/include/uapi/asm/prctl.h); without it the first tile
// instruction raises SIGILL.
const (
	archReqXcompPerm  = 0x1023
	xfeatureXtiledata = 18
)

// requestAMX asks the kernel for the tile data state for the whole process.
// It must run before any thread executes a tile instruction; the worker
// threads started afterwards inherit the permission.
func requestAMX() error {
	if _, _, e := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archReqXcompPerm, xfeatureXtiledata, 0); e != 0 {
		return e
	}
	return nil
}
