// Package gguf reads and writes GGUF model files (versions 2 and 3).
//
// Open maps the file into memory read-only; tensors are views into the
// mapping, so opening a multi-gigabyte model costs no copies and no Go heap.
// Every count, length, offset and size in the file is checked before it is
// used, so a damaged or hostile file yields one error, never a panic or an
// allocation larger than the file itself.
package gguf

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"

	"github.com/droidgo/droidgo/internal/cachedir"
	"github.com/droidgo/droidgo/model/quant"
)

// Magic is the first four bytes of every GGUF file.
const Magic = "GGUF"

// DefaultAlignment is the tensor data alignment when general.alignment is absent.
const DefaultAlignment = 32

// MaxDims is the most dimensions a ggml tensor can have.
const MaxDims = 4

// ErrFormat is wrapped by every error about malformed file contents.
var ErrFormat = errors.New("invalid GGUF")

// ValueType is the type tag of a metadata value.
type ValueType uint32

// Metadata value types, as numbered in the GGUF specification.
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

// Tensor is one tensor of a GGUF file.
type Tensor struct {
	Name string
	Type quant.Type
	// Dims are in ggml order: Dims[0] (ne0) is the contiguous row length.
	Dims []int
	// Offset is the position of the data relative to the start of the
	// data section.
	Offset uint64
	// Data is a read-only view of the tensor's bytes inside the file
	// mapping; it is invalid after File.Close.
	Data []byte
}

// Elements returns the number of elements of the tensor.
func (t *Tensor) Elements() int {
	n := 1
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// Rows returns the number of rows (the product of all dims but the first).
func (t *Tensor) Rows() int {
	n := 1
	for _, d := range t.Dims[1:] {
		n *= d
	}
	return n
}

// File is an open GGUF file.
type File struct {
	// Version is the GGUF version (2 or 3).
	Version uint32
	// Alignment of tensor data (general.alignment or 32).
	Alignment int
	// DataOffset is where the tensor data section starts in the file.
	DataOffset int64
	// Size is the file size in bytes.
	Size int64
	// Stat is the mapped file's status when it was opened (nil for
	// OpenBytes).
	Stat os.FileInfo

	keys    []string
	kv      map[string]any
	types   map[string]ValueType
	tensors []*Tensor
	byName  map[string]*Tensor
	unmap   func() error
	data    []byte // the whole file
}

// Identity is the file's identity for cache keys (cachedir.Identity of the
// mapped file; nil for OpenBytes and after Close): caches built from its
// weights are keyed with it.
func (f *File) Identity() []byte {
	if f.Stat == nil || f.data == nil {
		return nil
	}
	return cachedir.Identity(f.Stat, bytes.NewReader(f.data))
}

// Close releases the file mapping. Tensor data must not be used afterwards.
func (f *File) Close() error {
	if f == nil || f.unmap == nil {
		return nil
	}
	u := f.unmap
	f.unmap, f.data = nil, nil
	return u()
}

// Keys returns the metadata keys in file order.
func (f *File) Keys() []string { return append([]string(nil), f.keys...) }

// Value returns a metadata value as stored: uint8, int8, uint16, int16,
// uint32, int32, float32, bool, string, uint64, int64, float64, or a slice of
// one of those for arrays.
func (f *File) Value(key string) (any, bool) {
	v, ok := f.kv[key]
	return v, ok
}

// ValueType returns the GGUF type of a metadata value (TypeArray for arrays)
// and, for arrays, the element type.
func (f *File) ValueType(key string) (t, elem ValueType, ok bool) {
	v, ok := f.kv[key]
	if !ok {
		return 0, 0, false
	}
	t = f.types[key]
	if t == TypeArray {
		elem = arrayElemType(v)
	}
	return t, elem, true
}

// String returns a string value.
func (f *File) String(key string) (string, bool) {
	s, ok := f.kv[key].(string)
	return s, ok
}

// Uint returns an integer value of any width or signedness that is
// non-negative.
func (f *File) Uint(key string) (uint64, bool) {
	switch v := f.kv[key].(type) {
	case uint8:
		return uint64(v), true
	case uint16:
		return uint64(v), true
	case uint32:
		return uint64(v), true
	case uint64:
		return v, true
	case int8, int16, int32, int64:
		i := toInt64(v)
		if i < 0 {
			return 0, false
		}
		return uint64(i), true
	}
	return 0, false
}

// Int returns an integer value of any width that fits in an int64.
func (f *File) Int(key string) (int64, bool) {
	switch v := f.kv[key].(type) {
	case int8, int16, int32, int64:
		return toInt64(v), true
	case uint8, uint16, uint32, uint64:
		u, _ := f.Uint(key)
		if u > math.MaxInt64 {
			return 0, false
		}
		return int64(u), true
	}
	return 0, false
}

func toInt64(v any) int64 {
	switch v := v.(type) {
	case int8:
		return int64(v)
	case int16:
		return int64(v)
	case int32:
		return int64(v)
	case int64:
		return v
	}
	return 0
}

// Float returns a float32 or float64 value (integers are converted too).
func (f *File) Float(key string) (float64, bool) {
	switch v := f.kv[key].(type) {
	case float32:
		return float64(v), true
	case float64:
		return v, true
	}
	if i, ok := f.Int(key); ok {
		return float64(i), true
	}
	if u, ok := f.Uint(key); ok {
		return float64(u), true
	}
	return 0, false
}

// Bool returns a boolean value.
func (f *File) Bool(key string) (bool, bool) {
	b, ok := f.kv[key].(bool)
	return b, ok
}

// Strings returns a string array.
func (f *File) Strings(key string) ([]string, bool) {
	s, ok := f.kv[key].([]string)
	return s, ok
}

// Bools returns a bool array.
func (f *File) Bools(key string) ([]bool, bool) {
	b, ok := f.kv[key].([]bool)
	return b, ok
}

// Floats returns a float32 or float64 array as float64s.
func (f *File) Floats(key string) ([]float64, bool) {
	switch v := f.kv[key].(type) {
	case []float32:
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = float64(x)
		}
		return out, true
	case []float64:
		return append([]float64(nil), v...), true
	}
	return nil, false
}

// Ints returns an integer array of any width as int64s. It fails if a
// uint64 element does not fit.
func (f *File) Ints(key string) ([]int64, bool) {
	conv := func(n int, at func(i int) int64) []int64 {
		out := make([]int64, n)
		for i := range out {
			out[i] = at(i)
		}
		return out
	}
	switch v := f.kv[key].(type) {
	case []uint8:
		return conv(len(v), func(i int) int64 { return int64(v[i]) }), true
	case []int8:
		return conv(len(v), func(i int) int64 { return int64(v[i]) }), true
	case []uint16:
		return conv(len(v), func(i int) int64 { return int64(v[i]) }), true
	case []int16:
		return conv(len(v), func(i int) int64 { return int64(v[i]) }), true
	case []uint32:
		return conv(len(v), func(i int) int64 { return int64(v[i]) }), true
	case []int32:
		return conv(len(v), func(i int) int64 { return int64(v[i]) }), true
	case []int64:
		return append([]int64(nil), v...), true
	case []uint64:
		for _, x := range v {
			if x > math.MaxInt64 {
				return nil, false
			}
		}
		return conv(len(v), func(i int) int64 { return int64(v[i]) }), true
	}
	return nil, false
}

// Tensor returns the tensor with the given name.
func (f *File) Tensor(name string) (*Tensor, bool) {
	t, ok := f.byName[name]
	return t, ok
}

// Tensors returns all tensors in file order.
func (f *File) Tensors() []*Tensor { return append([]*Tensor(nil), f.tensors...) }

// Architecture returns general.architecture, or "" when absent.
func (f *File) Architecture() string {
	s, _ := f.String("general.architecture")
	return s
}

// TensorBytes returns the total size of all tensor data.
func (f *File) TensorBytes() int64 {
	var n int64
	for _, t := range f.tensors {
		n += int64(len(t.Data))
	}
	return n
}

// TypeCounts returns how many tensors of each type the file holds.
func (f *File) TypeCounts() map[quant.Type]int {
	m := map[quant.Type]int{}
	for _, t := range f.tensors {
		m[t.Type]++
	}
	return m
}

func sortedTypes(m map[quant.Type]int) []quant.Type {
	out := make([]quant.Type, 0, len(m))
	for t := range m {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// TypeSummary describes the tensor types, e.g. "F32:17 Q4_K:140 Q6_K:29".
func (f *File) TypeSummary() string {
	m := f.TypeCounts()
	s := ""
	for i, t := range sortedTypes(m) {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%s:%d", TypeName(t), m[t])
	}
	return s
}

func arrayElemType(v any) ValueType {
	switch v.(type) {
	case []uint8:
		return TypeUint8
	case []int8:
		return TypeInt8
	case []uint16:
		return TypeUint16
	case []int16:
		return TypeInt16
	case []uint32:
		return TypeUint32
	case []int32:
		return TypeInt32
	case []float32:
		return TypeFloat32
	case []bool:
		return TypeBool
	case []string:
		return TypeString
	case []uint64:
		return TypeUint64
	case []int64:
		return TypeInt64
	case []float64:
		return TypeFloat64
	}
	return 0
}
