//go:build purego || !amd64

package kernels

// missingLevels: the arm64 levels are proven under qemu (qemu_test.go), and
// other architectures have only the generic level.
func missingLevels() []missingLevel { return nil }
