//go:build purego || !amd64

package kernels

// twinLevels: only amd64 has levels whose kernels have AVX2 twins.
func twinLevels() []level { return nil }
