//go:build !purego

package kernels

import (
	"runtime"
	"testing"

	"golang.org/x/sys/cpu"
)

// BenchmarkPeak measures this core's VPDPBUSD, VDPBF16PS and VFMADD231PS
// throughput on zmm registers (GMAC/s, one thread; "x2" runs one copy per GOMAXPROCS
// thread), the ceiling the matrix-matrix kernels' GMAC/s are a share of.
func BenchmarkPeak(b *testing.B) {
	const iters = 1 << 16
	cases := []struct {
		name string
		has  bool
		macs float64
		run  func(int)
	}{
		{"VPDPBUSD", avx512Err == nil, 64, vnniPeakZ},
		{"VDPBF16PS", avx512Err == nil && cpu.X86.HasAVX512BF16, 32, bf16PeakZ},
		{"VFMADD231PS", avx512Err == nil, 16, fmaPeakZ},
	}
	for _, c := range cases {
		for _, par := range []bool{false, true} {
			name := c.name
			if par {
				name += "/all-threads"
			}
			b.Run(name, func(b *testing.B) {
				if !c.has {
					b.Skip("the CPU lacks the instruction")
				}
				if par {
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							c.run(iters)
						}
					})
				} else {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					cpu0 := threadCPU()
					for b.Loop() {
						c.run(iters)
					}
					if cpu := (threadCPU() - cpu0).Seconds(); cpu > 0 {
						b.ReportMetric(float64(b.N)*iters*12*c.macs/cpu/1e9, "GMAC/cpu-s")
					}
				}
				b.ReportMetric(float64(b.N)*iters*12*c.macs/b.Elapsed().Seconds()/1e9, "GMAC/s")
			})
		}
	}
}
