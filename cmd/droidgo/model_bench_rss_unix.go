//go:build unix

package main

import (
	"runtime"
	"syscall"
)

// peakRSSMB is the process's peak resident set size in MB (getrusage
// ru_maxrss: KiB on Linux, bytes on darwin).
func peakRSSMB() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	unit := 1024.0
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		unit = 1
	}
	return float64(ru.Maxrss) * unit / 1e6
}
