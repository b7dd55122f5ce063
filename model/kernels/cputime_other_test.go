//go:build !linux

package kernels

import "time"

// threadCPU: not available here, so benchmarks report wall time only.
func threadCPU() time.Duration { return 0 }
