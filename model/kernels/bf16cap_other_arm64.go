//go:build !purego && !linux && !darwin

package kernels

// hasBF16: FEAT_BF16 is not detected on this OS, so its kernels stay off.
func hasBF16() bool { return false }
