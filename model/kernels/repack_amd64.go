//go:build !purego

package kernels

import "github.com/droidgo/droidgo/model/quant"

// repackArch is Repack's copy of Q4_K and Q6_K on CPUs with the avx512
// level's instructions: q4kPackZ and q6kPackZ, which interleave 16 rows
// into two groups with gathers for that level's matrix-matrix products of
// the file layout, write exactly repackGo's bytes (TestRepackArch), where
// the Go copy moves about 2 GB/s per core. An odd last group, Q8_0 and other
// CPUs take repackGo. The layout does not depend on the level in use.
func repackArch(t quant.Type, dst, src []byte, rows, rb int) bool {
	if avx512Err != nil || rows < 2*Interleave {
		return false
	}
	pack := q6kPackZ
	switch t {
	case quant.Q4_K:
		pack = q4kPackZ
	case quant.Q6_K:
	default:
		return false
	}
	var idx [2 * Interleave]int32
	for r := range idx {
		idx[r] = int32(r * rb)
	}
	nb := rb / t.TypeSize()
	r16 := rows &^ (2*Interleave - 1)
	for g := 0; g < r16; g += 2 * Interleave {
		pack(&src[g*rb], &idx[0], nb, &dst[g*rb], Interleave*rb)
	}
	if r16 < rows {
		repackGo(t, dst[r16*rb:], src[r16*rb:], rows-r16, rb)
	}
	return true
}
