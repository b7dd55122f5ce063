//go:build unix

package main

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
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

// currentRSSMB is the process's resident set size now in MB (Linux:
// /proc/self/statm; elsewhere the peak, peakRSSMB).
func currentRSSMB() float64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return peakRSSMB()
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return peakRSSMB()
	}
	pages, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil {
		return peakRSSMB()
	}
	return float64(pages) * float64(os.Getpagesize()) / 1e6
}
