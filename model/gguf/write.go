package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/droidgo/droidgo/model/quant"
)

// Writer builds a GGUF v3 file. Metadata keys and tensors are written in the
// order they were added. Tensor data can be given up front (AddTensor) or
// produced while writing (AddTensorFunc), so multi-gigabyte files can be
// streamed without holding every tensor in memory.
type Writer struct {
	keys    []string
	values  map[string]any
	tensors []wtensor
	err     error
}

type wtensor struct {
	name string
	typ  quant.Type
	dims []int
	size int
	data []byte
	fill func(buf []byte) error
}

// NewWriter returns an empty Writer.
func NewWriter() *Writer { return &Writer{values: map[string]any{}} }

// Set adds or replaces a metadata value. Accepted Go types: uint8, int8,
// uint16, int16, uint32, int32, float32, bool, string, uint64, int64, float64
// and slices of those; int is written as int32 and []int as []int32.
func (w *Writer) Set(key string, value any) {
	switch v := value.(type) {
	case int:
		value = int32(v)
	case []int:
		a := make([]int32, len(v))
		for i, x := range v {
			a[i] = int32(x)
		}
		value = a
	}
	if _, _, ok := valueTag(value); !ok {
		w.setErr(fmt.Errorf("gguf writer: metadata %q has unsupported Go type %T", key, value))
		return
	}
	if _, ok := w.values[key]; !ok {
		w.keys = append(w.keys, key)
	}
	w.values[key] = value
}

func (w *Writer) setErr(err error) {
	if w.err == nil {
		w.err = err
	}
}

// AddTensor adds a tensor with its encoded data (len(data) must equal the
// size implied by typ and dims).
func (w *Writer) AddTensor(name string, typ quant.Type, dims []int, data []byte) {
	w.add(name, typ, dims, data, nil)
}

// AddTensorFunc adds a tensor whose data fill writes into buf (of exactly the
// tensor's size) when the file is written.
func (w *Writer) AddTensorFunc(name string, typ quant.Type, dims []int, fill func(buf []byte) error) {
	w.add(name, typ, dims, nil, fill)
}

func (w *Writer) add(name string, typ quant.Type, dims []int, data []byte, fill func([]byte) error) {
	if len(dims) == 0 || len(dims) > MaxDims {
		w.setErr(fmt.Errorf("gguf writer: tensor %q has %d dims", name, len(dims)))
		return
	}
	block, bsize, known := typeLayout(typ)
	if !known || dims[0] <= 0 || dims[0]%block != 0 {
		w.setErr(fmt.Errorf("gguf writer: tensor %q: row length %d does not fit type %s", name, dims[0], TypeName(typ)))
		return
	}
	size := dims[0] / block * bsize
	for _, d := range dims[1:] {
		size *= d
	}
	if fill == nil && len(data) != size {
		w.setErr(fmt.Errorf("gguf writer: tensor %q has %d bytes of data, want %d", name, len(data), size))
		return
	}
	w.tensors = append(w.tensors, wtensor{name, typ, append([]int(nil), dims...), size, data, fill})
}

func (w *Writer) alignment() int {
	if a, ok := w.values["general.alignment"].(uint32); ok && a > 0 {
		return int(a)
	}
	return DefaultAlignment
}

// WriteFile writes the file to path.
func (w *Writer) WriteFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := w.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

type countWriter struct {
	w *bufio.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// WriteTo writes the GGUF image to out.
func (w *Writer) WriteTo(out io.Writer) (int64, error) {
	if w.err != nil {
		return 0, w.err
	}
	cw := &countWriter{w: bufio.NewWriterSize(out, 1<<20)}
	le := binary.LittleEndian
	var scratch [8]byte
	u32 := func(v uint32) { le.PutUint32(scratch[:], v); cw.Write(scratch[:4]) }
	u64 := func(v uint64) { le.PutUint64(scratch[:], v); cw.Write(scratch[:8]) }
	str := func(s string) { u64(uint64(len(s))); io.WriteString(cw, s) }

	cw.Write([]byte(Magic))
	u32(3)
	u64(uint64(len(w.tensors)))
	u64(uint64(len(w.keys)))
	for _, k := range w.keys {
		str(k)
		writeValue(cw, w.values[k])
	}
	align := w.alignment()
	var off int
	for _, t := range w.tensors {
		str(t.name)
		u32(uint32(len(t.dims)))
		for _, d := range t.dims {
			u64(uint64(d))
		}
		u32(uint32(t.typ))
		u64(uint64(off))
		off += (t.size + align - 1) / align * align
	}
	pad := func() {
		if r := cw.n % int64(align); r != 0 {
			cw.Write(make([]byte, int64(align)-r))
		}
	}
	pad()
	for _, t := range w.tensors {
		data := t.data
		if t.fill != nil {
			data = make([]byte, t.size)
			if err := t.fill(data); err != nil {
				return cw.n, fmt.Errorf("gguf writer: tensor %q: %w", t.name, err)
			}
		}
		if _, err := cw.Write(data); err != nil {
			return cw.n, err
		}
		pad()
	}
	if err := cw.w.Flush(); err != nil {
		return cw.n, err
	}
	return cw.n, nil
}

func valueTag(v any) (t, elem ValueType, ok bool) {
	switch v.(type) {
	case uint8:
		return TypeUint8, 0, true
	case int8:
		return TypeInt8, 0, true
	case uint16:
		return TypeUint16, 0, true
	case int16:
		return TypeInt16, 0, true
	case uint32:
		return TypeUint32, 0, true
	case int32:
		return TypeInt32, 0, true
	case float32:
		return TypeFloat32, 0, true
	case bool:
		return TypeBool, 0, true
	case string:
		return TypeString, 0, true
	case uint64:
		return TypeUint64, 0, true
	case int64:
		return TypeInt64, 0, true
	case float64:
		return TypeFloat64, 0, true
	}
	if e := arrayElemType(v); e != 0 || isUint8Slice(v) {
		return TypeArray, e, true
	}
	return 0, 0, false
}

func isUint8Slice(v any) bool { _, ok := v.([]uint8); return ok }

func writeValue(w io.Writer, v any) {
	le := binary.LittleEndian
	t, elem, _ := valueTag(v)
	binary.Write(w, le, uint32(t))
	if t != TypeArray {
		writeScalar(w, v)
		return
	}
	binary.Write(w, le, uint32(elem))
	switch a := v.(type) {
	case []string:
		binary.Write(w, le, uint64(len(a)))
		for _, s := range a {
			writeScalar(w, s)
		}
	case []bool:
		binary.Write(w, le, uint64(len(a)))
		for _, b := range a {
			writeScalar(w, b)
		}
	default:
		// Fixed-size numeric slices: binary.Write encodes them little-endian.
		n := lenOf(v)
		binary.Write(w, le, uint64(n))
		binary.Write(w, le, v)
	}
}

func lenOf(v any) int {
	switch a := v.(type) {
	case []uint8:
		return len(a)
	case []int8:
		return len(a)
	case []uint16:
		return len(a)
	case []int16:
		return len(a)
	case []uint32:
		return len(a)
	case []int32:
		return len(a)
	case []float32:
		return len(a)
	case []uint64:
		return len(a)
	case []int64:
		return len(a)
	case []float64:
		return len(a)
	}
	return 0
}

func writeScalar(w io.Writer, v any) {
	le := binary.LittleEndian
	switch x := v.(type) {
	case string:
		binary.Write(w, le, uint64(len(x)))
		io.WriteString(w, x)
	case bool:
		b := uint8(0)
		if x {
			b = 1
		}
		w.Write([]byte{b})
	case float32:
		binary.Write(w, le, math.Float32bits(x))
	case float64:
		binary.Write(w, le, math.Float64bits(x))
	default:
		binary.Write(w, le, x)
	}
}
