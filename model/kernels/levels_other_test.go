//go:build purego || !amd64

package kernels

// twinLevels: only amd64 has tables beside its levels to test (kernel
// variants of other CPUs, AVX2 twins).
func twinLevels() []level { return nil }
