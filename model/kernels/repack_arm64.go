//go:build !purego

package kernels

import "github.com/droidgo/droidgo/model/quant"

// repackArch is Repack's copy in NEON (repack_arm64.s, every arm64 CPU):
// ZIPs and ST4 stores that move 16 to 64 bytes each, where the Go copy
// (repackGo, which it reproduces byte for byte) spends about 5
// instructions per byte (docs/PERFORMANCE.md has the counts). rows is a
// positive multiple of Interleave and rb a positive multiple of t's block.
func repackArch(t quant.Type, dst, src []byte, rows, rb int) bool {
	f := repackQ6Kx8
	switch t {
	case quant.Q4_K:
		f = repackQ4Kx8
	case quant.Q8_0:
		f = repackQ80x8
	}
	f(&dst[0], &src[0], rb, rb/t.TypeSize(), rows/Interleave)
	return true
}

// The copies of whole groups of 8 rows of nb blocks each (rb bytes).

//go:noescape
func repackQ4Kx8(dst, src *byte, rb, nb, groups int)

//go:noescape
func repackQ6Kx8(dst, src *byte, rb, nb, groups int)

//go:noescape
func repackQ80x8(dst, src *byte, rb, nb, groups int)
