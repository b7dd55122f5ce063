// Package quant defines ggml's tensor element types, their block layouts, and
// pure-Go dequantisation, quantisation and reference dot products that match
// llama.cpp's definitions (ggml-quants.c) bit for bit.
package quant

import (
	"fmt"
	"math"
)

// Type is a ggml tensor element type, numbered as in ggml.h and GGUF files.
type Type uint32

// The ggml types droidgo knows the layout of. Only some have dequantisers
// (see Supported).
const (
	F32  Type = 0
	F16  Type = 1
	Q4_0 Type = 2
	Q4_1 Type = 3
	Q5_0 Type = 6
	Q5_1 Type = 7
	Q8_0 Type = 8
	Q8_1 Type = 9
	Q2_K Type = 10
	Q3_K Type = 11
	Q4_K Type = 12
	Q5_K Type = 13
	Q6_K Type = 14
	Q8_K Type = 15
	I8   Type = 24
	I16  Type = 25
	I32  Type = 26
	I64  Type = 27
	F64  Type = 28
	BF16 Type = 30
)

// QK_K is the super-block size of the K-quants.
const QK_K = 256

type typeInfo struct {
	name      string
	blockSize int // elements per block
	typeSize  int // bytes per block
}

var types = map[Type]typeInfo{
	F32:  {"F32", 1, 4},
	F16:  {"F16", 1, 2},
	Q4_0: {"Q4_0", 32, 2 + 16},
	Q4_1: {"Q4_1", 32, 2 + 2 + 16},
	Q5_0: {"Q5_0", 32, 2 + 4 + 16},
	Q5_1: {"Q5_1", 32, 2 + 2 + 4 + 16},
	Q8_0: {"Q8_0", 32, 2 + 32},
	Q8_1: {"Q8_1", 32, 4 + 32},
	Q2_K: {"Q2_K", QK_K, QK_K/16 + QK_K/4 + 2 + 2},
	Q3_K: {"Q3_K", QK_K, QK_K/8 + QK_K/4 + 12 + 2},
	Q4_K: {"Q4_K", QK_K, 2 + 2 + 12 + QK_K/2},
	Q5_K: {"Q5_K", QK_K, 2 + 2 + 12 + QK_K/8 + QK_K/2},
	Q6_K: {"Q6_K", QK_K, QK_K/2 + QK_K/4 + QK_K/16 + 2},
	Q8_K: {"Q8_K", QK_K, 4 + QK_K + QK_K/16*2},
	I8:   {"I8", 1, 1},
	I16:  {"I16", 1, 2},
	I32:  {"I32", 1, 4},
	I64:  {"I64", 1, 8},
	F64:  {"F64", 1, 8},
	BF16: {"BF16", 1, 2},
}

// Known reports whether t is a type whose block layout is known.
func (t Type) Known() bool { _, ok := types[t]; return ok }

// Supported reports whether droidgo can dequantise and compute with t.
func (t Type) Supported() bool {
	switch t {
	case F32, F16, BF16, Q4_0, Q8_0, Q4_K, Q5_K, Q6_K:
		return true
	}
	return false
}

// String returns ggml's name of the type, e.g. "Q4_K".
func (t Type) String() string {
	if ti, ok := types[t]; ok {
		return ti.name
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// BlockSize is the number of elements in one block (1 for plain types).
func (t Type) BlockSize() int { return types[t].blockSize }

// TypeSize is the number of bytes in one block.
func (t Type) TypeSize() int { return types[t].typeSize }

// RowSize returns the bytes taken by n elements, or -1 if n is not a multiple
// of the block size or t is unknown.
func (t Type) RowSize(n int) int {
	ti, ok := types[t]
	if !ok || n < 0 || n%ti.blockSize != 0 {
		return -1
	}
	return n / ti.blockSize * ti.typeSize
}

// ParseType parses a type name such as "q4_k" or "BF16" (case-insensitive).
func ParseType(s string) (Type, bool) {
	for t, ti := range types {
		if equalFold(ti.name, s) {
			return t, true
		}
	}
	return 0, false
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// FP16ToFP32 converts an IEEE half-precision value exactly.
func FP16ToFP32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp == 0:
		if mant == 0 {
			return math.Float32frombits(sign)
		}
		// Subnormal: value = mant * 2^-24.
		f := float32(mant) * (1.0 / (1 << 24))
		if sign != 0 {
			f = -f
		}
		return f
	}
	return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
}

// FP32ToFP16 rounds f to the nearest half-precision value (ties to even), as
// ggml's GGML_FP32_TO_FP16 (F16C / _cvtss_sh) does.
func FP32ToFP16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return sign | 0x7e00 | uint16(mant>>13)
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		if e < -10 {
			return sign
		}
		m := mant | 0x800000
		shift := uint32(14 - e)
		h := m >> shift
		rem := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	h := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // may carry into the exponent, which is the correct rounding
	}
	return sign | uint16(h)
}

// BF16ToFP32 converts a bfloat16 value exactly.
func BF16ToFP32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// FP32ToBF16 rounds to nearest even as ggml_compute_fp32_to_bf16 does (NaNs
// are quieted).
func FP32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16 | 64)
	}
	return uint16((u + (0x7fff + (u >> 16 & 1))) >> 16)
}
