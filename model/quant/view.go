package quant

import (
	"sync"
	"unsafe"
)

// littleEndian is true on every platform droidgo targets (amd64, arm64);
// the views below are only taken when it holds.
var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// asFloat32s views little-endian F32 bytes as float32s without copying, or
// returns nil when the bytes are misaligned or the host is big-endian.
func asFloat32s(b []byte) []float32 {
	if !littleEndian || len(b) == 0 || uintptr(unsafe.Pointer(&b[0]))%4 != 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4)
}

var (
	f16Once sync.Once
	f16Tab  *[1 << 16]float32
)

// f16Table returns the fp16 -> fp32 conversion table (ggml keeps the same
// table for its scalar paths).
func f16Table() *[1 << 16]float32 {
	f16Once.Do(func() {
		f16Tab = new([1 << 16]float32)
		for i := range f16Tab {
			f16Tab[i] = FP16ToFP32(uint16(i))
		}
	})
	return f16Tab
}
