//go:build purego || !(amd64 || arm64)

package kernels

// archLevels: no assembly kernels on this architecture (or with the purego
// build tag), so only the generic level exists.
func archLevels() []level { return nil }

// missingLevels: there is nothing but the generic level to miss here.
func missingLevels() []missingLevel { return nil }

// plainPackedInGo: no matrix-matrix kernels here (PlainBatchSlower).
const plainPackedInGo = false
