//go:build !(arm64 || amd64) || purego

package kernels

import "github.com/droidgo/droidgo/model/quant"

// repackArch reports that this architecture has no assembly copy: Repack
// runs repackGo.
func repackArch(t quant.Type, dst, src []byte, rows, rb int) bool { return false }
