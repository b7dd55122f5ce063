package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"os"
	"unicode/utf8"

	"github.com/droidgo/droidgo/internal/mmap"
	"github.com/droidgo/droidgo/model/quant"
)

// Open maps the GGUF file at path and parses and validates it.
func Open(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open model: %w", err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("open model: %w", err)
	}
	if st.IsDir() {
		return nil, fmt.Errorf("open model: %s is a directory, not a GGUF file", path)
	}
	size := st.Size()
	if size < 24 {
		return nil, fmt.Errorf("%s: %w: file is %d bytes, too short for a GGUF header", path, ErrFormat, size)
	}
	data, unmap, err := mmap.File(fh, size)
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", path, err)
	}
	f, err := parse(data)
	if err != nil {
		unmap()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.unmap = unmap
	f.Stat, f.data = st, data
	return f, nil
}

// OpenBytes parses a GGUF image held in memory. Tensor data are views into
// data, which must not be modified while the File is used.
func OpenBytes(data []byte) (*File, error) {
	return parse(data)
}

type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s (at byte %d)", ErrFormat, fmt.Sprintf(format, args...), r.off)
	}
}

func (r *reader) remaining() int { return len(r.b) - r.off }

func (r *reader) bytes(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > r.remaining() {
		r.fail("unexpected end of file: need %d bytes, %d left", n, r.remaining())
		return nil
	}
	s := r.b[r.off : r.off+n]
	r.off += n
	return s
}

func (r *reader) u8() uint8 {
	b := r.bytes(1)
	if b == nil {
		return 0
	}
	return b[0]
}

func (r *reader) u16() uint16 {
	b := r.bytes(2)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint16(b)
}

func (r *reader) u32() uint32 {
	b := r.bytes(4)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}

func (r *reader) u64() uint64 {
	b := r.bytes(8)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}

func (r *reader) str() string {
	n := r.u64()
	if r.err != nil {
		return ""
	}
	if n > uint64(r.remaining()) {
		r.fail("string length %d runs past the end of the file", n)
		return ""
	}
	return string(r.bytes(int(n)))
}

// count reads an element count and checks that n elements of at least
// minSize bytes each can still fit in the file, which bounds every
// allocation by the file size.
func (r *reader) count(what string, minSize int) int {
	n := r.u64()
	if r.err != nil {
		return 0
	}
	if n > uint64(r.remaining()/minSize) {
		r.fail("%s count %d is larger than the rest of the file allows", what, n)
		return 0
	}
	return int(n)
}

var valueSizes = map[ValueType]int{
	TypeUint8: 1, TypeInt8: 1, TypeUint16: 2, TypeInt16: 2, TypeUint32: 4, TypeInt32: 4,
	TypeFloat32: 4, TypeBool: 1, TypeString: 8, TypeUint64: 8, TypeInt64: 8, TypeFloat64: 8,
}

func (r *reader) scalar(t ValueType) any {
	switch t {
	case TypeUint8:
		return r.u8()
	case TypeInt8:
		return int8(r.u8())
	case TypeUint16:
		return r.u16()
	case TypeInt16:
		return int16(r.u16())
	case TypeUint32:
		return r.u32()
	case TypeInt32:
		return int32(r.u32())
	case TypeFloat32:
		return math.Float32frombits(r.u32())
	case TypeBool:
		b := r.u8()
		if b > 1 {
			r.fail("bool value %d is not 0 or 1", b)
		}
		return b == 1
	case TypeString:
		return r.str()
	case TypeUint64:
		return r.u64()
	case TypeInt64:
		return int64(r.u64())
	case TypeFloat64:
		return math.Float64frombits(r.u64())
	}
	r.fail("unknown metadata value type %d", t)
	return nil
}

func readArray[T any](r *reader, n int, read func() T) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = read()
		if r.err != nil {
			return nil
		}
	}
	return out
}

func (r *reader) array() any {
	et := ValueType(r.u32())
	if r.err != nil {
		return nil
	}
	size, ok := valueSizes[et]
	if !ok {
		if et == TypeArray {
			r.fail("nested arrays are not supported")
		} else {
			r.fail("unknown array element type %d", et)
		}
		return nil
	}
	n := r.count("array element", size)
	if r.err != nil {
		return nil
	}
	switch et {
	case TypeUint8:
		return readArray(r, n, r.u8)
	case TypeInt8:
		return readArray(r, n, func() int8 { return int8(r.u8()) })
	case TypeUint16:
		return readArray(r, n, r.u16)
	case TypeInt16:
		return readArray(r, n, func() int16 { return int16(r.u16()) })
	case TypeUint32:
		return readArray(r, n, r.u32)
	case TypeInt32:
		return readArray(r, n, func() int32 { return int32(r.u32()) })
	case TypeFloat32:
		return readArray(r, n, func() float32 { return math.Float32frombits(r.u32()) })
	case TypeBool:
		return readArray(r, n, func() bool { return r.scalar(TypeBool).(bool) })
	case TypeString:
		return readArray(r, n, r.str)
	case TypeUint64:
		return readArray(r, n, r.u64)
	case TypeInt64:
		return readArray(r, n, func() int64 { return int64(r.u64()) })
	case TypeFloat64:
		return readArray(r, n, func() float64 { return math.Float64frombits(r.u64()) })
	}
	return nil
}

func parse(data []byte) (*File, error) {
	r := &reader{b: data}
	if len(data) < 4 || string(data[:4]) != Magic {
		got := data
		if len(got) > 4 {
			got = got[:4]
		}
		return nil, fmt.Errorf("%w: bad magic %q, want %q (not a GGUF file)", ErrFormat, got, Magic)
	}
	r.off = 4
	f := &File{Size: int64(len(data)), kv: map[string]any{}, types: map[string]ValueType{}, byName: map[string]*Tensor{}}
	f.Version = r.u32()
	if r.err == nil && f.Version != 2 && f.Version != 3 {
		if v := bits.ReverseBytes32(f.Version); v == 2 || v == 3 {
			return nil, fmt.Errorf("%w: big-endian GGUF (version %d) is not supported; use a little-endian file", ErrFormat, v)
		}
		return nil, fmt.Errorf("%w: unsupported GGUF version %d (want 2 or 3)", ErrFormat, f.Version)
	}
	// A tensor info takes at least 8 (name) + 4 + 4 + 8 bytes; a kv pair at
	// least 8 (key) + 4 (type) + 1 bytes.
	nTensors := r.count("tensor", 24)
	nKV := r.count("metadata", 13)
	for i := 0; i < nKV && r.err == nil; i++ {
		key := r.str()
		t := ValueType(r.u32())
		if r.err != nil {
			break
		}
		if key == "" || !utf8.ValidString(key) {
			r.fail("metadata key %d is empty or not UTF-8", i)
			break
		}
		if _, dup := f.kv[key]; dup {
			r.fail("duplicate metadata key %q", key)
			break
		}
		var v any
		if t == TypeArray {
			v = r.array()
		} else {
			v = r.scalar(t)
		}
		if r.err != nil {
			r.err = fmt.Errorf("metadata %q: %w", key, r.err)
			break
		}
		f.keys = append(f.keys, key)
		f.kv[key] = v
		f.types[key] = t
	}
	if r.err != nil {
		return nil, r.err
	}

	f.Alignment = DefaultAlignment
	if v, ok := f.kv["general.alignment"]; ok {
		a, isU32 := v.(uint32)
		if !isU32 || a == 0 || a&(a-1) != 0 || a > 1<<20 {
			return nil, fmt.Errorf("%w: general.alignment %v is not a power-of-two uint32", ErrFormat, v)
		}
		f.Alignment = int(a)
	}

	for i := 0; i < nTensors && r.err == nil; i++ {
		name := r.str()
		nd := r.u32()
		if r.err != nil {
			break
		}
		if nd == 0 || nd > MaxDims {
			r.fail("tensor %q has %d dimensions (want 1..%d)", name, nd, MaxDims)
			break
		}
		dims := make([]int, nd)
		total := uint64(1)
		for j := range dims {
			d := r.u64()
			if r.err != nil {
				break
			}
			// Bound every dimension and the element count so that the byte
			// size below cannot overflow.
			if d == 0 || d > 1<<40 || total > (1<<50)/d {
				r.fail("tensor %q has an invalid dimension %d", name, d)
				break
			}
			total *= d
			dims[j] = int(d)
		}
		typ := quant.Type(r.u32())
		off := r.u64()
		if r.err != nil {
			break
		}
		if name == "" {
			r.fail("tensor %d has an empty name", i)
			break
		}
		if _, dup := f.byName[name]; dup {
			r.fail("duplicate tensor %q", name)
			break
		}
		block, _, known := typeLayout(typ)
		if !known {
			r.fail("tensor %q has unknown type %d", name, uint32(typ))
			break
		}
		if dims[0]%block != 0 {
			r.fail("tensor %q: row length %d is not a multiple of the %s block size %d", name, dims[0], TypeName(typ), block)
			break
		}
		if off%uint64(f.Alignment) != 0 {
			r.fail("tensor %q: data offset %d is not aligned to %d", name, off, f.Alignment)
			break
		}
		t := &Tensor{Name: name, Type: typ, Dims: dims, Offset: off}
		f.tensors = append(f.tensors, t)
		f.byName[name] = t
	}
	if r.err != nil {
		return nil, r.err
	}
	start := (r.off + f.Alignment - 1) / f.Alignment * f.Alignment
	if nTensors > 0 && start > len(data) {
		return nil, fmt.Errorf("%w: tensor data section starts at %d, past the end of the file (%d bytes)", ErrFormat, start, len(data))
	}
	f.DataOffset = int64(start)
	avail := uint64(len(data) - min(start, len(data)))
	for _, t := range f.tensors {
		block, bsize, _ := typeLayout(t.Type)
		size := uint64(t.Dims[0]/block) * uint64(bsize)
		for _, d := range t.Dims[1:] {
			size *= uint64(d)
		}
		if t.Offset > avail || size > avail-t.Offset {
			return nil, fmt.Errorf("%w: tensor %q (%d bytes at data offset %d) runs past the end of the file (truncated?)", ErrFormat, t.Name, size, t.Offset)
		}
		lo := start + int(t.Offset)
		t.Data = data[lo : lo+int(size) : lo+int(size)]
	}
	return f, nil
}
