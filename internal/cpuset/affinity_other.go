//go:build !linux

package cpuset

import "errors"

// System reads this machine's CPUs; only Linux (and Android) describe
// them in sysfs.
func System() ([]CPU, error) { return nil, errors.New("no /sys/devices/system/cpu on this OS") }

// Allowed returns nil: every CPU.
func Allowed() ([]int, error) { return nil, nil }

// Pin does nothing: threads are not pinned on this OS.
func Pin([]int) error { return nil }

// CanPin reports whether Pin does anything here.
const CanPin = false
