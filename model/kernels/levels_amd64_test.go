//go:build !purego

package kernels

// missingLevels lists the amd64 levels this CPU (or OS) cannot run, each
// with the reason, so that their tests report a skip naming it.
func missingLevels() []missingLevel {
	var m []missingLevel
	if avx512Err != nil {
		m = append(m, missingLevel{"avx512", avx512Err})
	}
	if amxErr != nil {
		m = append(m, missingLevel{"amx", amxErr})
	}
	return m
}
