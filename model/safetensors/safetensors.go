// Package safetensors reads and writes safetensors files (the HF checkpoint
// format) through read-only memory maps; tensors are views, not copies.
package safetensors

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/droidgo/droidgo/internal/mmap"
)

// ErrFormat is wrapped by every error about malformed file contents.
var ErrFormat = errors.New("invalid safetensors")

// maxHeader bounds the JSON header so a corrupt length cannot force a huge
// allocation.
const maxHeader = 100 << 20

// Tensor is one tensor of a safetensors file.
type Tensor struct {
	Name  string
	DType string // "BF16", "F16", "F32", ...
	// Shape in PyTorch order (last dimension contiguous).
	Shape []int
	Data  []byte
}

// File is an open safetensors file.
type File struct {
	Metadata map[string]string
	tensors  []*Tensor
	byName   map[string]*Tensor
	unmap    func() error
}

// dtypeSize holds the byte-sized dtypes of the safetensors specification,
// including ones droidgo does not compute with (a checkpoint may carry them
// for tensors it does not need).
var dtypeSize = map[string]int{
	"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1,
	"I16": 2, "U16": 2, "F16": 2, "BF16": 2,
	"I32": 4, "U32": 4, "F32": 4,
	"F64": 8, "I64": 8, "U64": 8,
}

// Open maps and parses the file at path.
func Open(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() < 8 {
		return nil, fmt.Errorf("%s: %w: file is %d bytes", path, ErrFormat, st.Size())
	}
	data, unmap, err := mmap.File(fh, st.Size())
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", path, err)
	}
	f, err := Parse(data)
	if err != nil {
		unmap()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.unmap = unmap
	return f, nil
}

// Close releases the mapping.
func (f *File) Close() error {
	if f.unmap == nil {
		return nil
	}
	u := f.unmap
	f.unmap = nil
	return u()
}

// Parse parses a safetensors image in memory; tensors are views into data.
func Parse(data []byte) (*File, error) {
	if len(data) < 8 {
		return nil, fmt.Errorf("%w: %d bytes, too short", ErrFormat, len(data))
	}
	n := binary.LittleEndian.Uint64(data)
	if n > maxHeader || n > uint64(len(data)-8) {
		return nil, fmt.Errorf("%w: header length %d does not fit in the file", ErrFormat, n)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data[8:8+n], &raw); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrFormat, err)
	}
	body := data[8+n:]
	f := &File{byName: map[string]*Tensor{}}
	for name, msg := range raw {
		if name == "__metadata__" {
			// The format wants string values, but some writers store
			// numbers; those are dropped rather than failing the file.
			var md map[string]any
			if err := json.Unmarshal(msg, &md); err != nil {
				return nil, fmt.Errorf("%w: __metadata__ is not a JSON object", ErrFormat)
			}
			f.Metadata = map[string]string{}
			for k, v := range md {
				if s, ok := v.(string); ok {
					f.Metadata[k] = s
				}
			}
			continue
		}
		var h struct {
			DType   string   `json:"dtype"`
			Shape   []int    `json:"shape"`
			Offsets []uint64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(msg, &h); err != nil {
			return nil, fmt.Errorf("%w: tensor %q: %v", ErrFormat, name, err)
		}
		size, ok := dtypeSize[h.DType]
		if !ok {
			return nil, fmt.Errorf("%w: tensor %q has unknown dtype %q", ErrFormat, name, h.DType)
		}
		if len(h.Offsets) != 2 || h.Offsets[0] > h.Offsets[1] || h.Offsets[1] > uint64(len(body)) {
			return nil, fmt.Errorf("%w: tensor %q: data offsets %v run past the end of the file", ErrFormat, name, h.Offsets)
		}
		elems := uint64(1)
		for _, d := range h.Shape {
			if d < 0 || d > 1<<40 || (d > 0 && elems > (1<<50)/uint64(d)) {
				return nil, fmt.Errorf("%w: tensor %q has invalid shape %v", ErrFormat, name, h.Shape)
			}
			elems *= uint64(d)
		}
		if elems*uint64(size) != h.Offsets[1]-h.Offsets[0] {
			return nil, fmt.Errorf("%w: tensor %q: shape %v needs %d bytes, offsets give %d", ErrFormat, name, h.Shape, elems*uint64(size), h.Offsets[1]-h.Offsets[0])
		}
		t := &Tensor{Name: name, DType: h.DType, Shape: h.Shape, Data: body[h.Offsets[0]:h.Offsets[1]:h.Offsets[1]]}
		f.tensors = append(f.tensors, t)
		f.byName[name] = t
	}
	sort.Slice(f.tensors, func(i, j int) bool { return f.tensors[i].Name < f.tensors[j].Name })
	return f, nil
}

// Tensor returns the named tensor.
func (f *File) Tensor(name string) (*Tensor, bool) {
	t, ok := f.byName[name]
	return t, ok
}

// Tensors returns all tensors sorted by name.
func (f *File) Tensors() []*Tensor { return append([]*Tensor(nil), f.tensors...) }

// Write writes tensors (in the given order) and metadata as a safetensors file.
func Write(w io.Writer, tensors []Tensor, metadata map[string]string) error {
	header := map[string]any{}
	if len(metadata) > 0 {
		header["__metadata__"] = metadata
	}
	var off uint64
	for _, t := range tensors {
		size, ok := dtypeSize[t.DType]
		if !ok {
			return fmt.Errorf("safetensors: tensor %q has unknown dtype %q", t.Name, t.DType)
		}
		elems := 1
		for _, d := range t.Shape {
			elems *= d
		}
		if elems*size != len(t.Data) {
			return fmt.Errorf("safetensors: tensor %q has %d bytes for shape %v", t.Name, len(t.Data), t.Shape)
		}
		header[t.Name] = map[string]any{"dtype": t.DType, "shape": t.Shape, "data_offsets": []uint64{off, off + uint64(len(t.Data))}}
		off += uint64(len(t.Data))
	}
	js, err := json.Marshal(header)
	if err != nil {
		return err
	}
	// Pad the header with spaces to 8 bytes, as the reference writer does.
	for len(js)%8 != 0 {
		js = append(js, ' ')
	}
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(js)))
	if _, err := w.Write(n[:]); err != nil {
		return err
	}
	if _, err := w.Write(js); err != nil {
		return err
	}
	for _, t := range tensors {
		if _, err := w.Write(t.Data); err != nil {
			return err
		}
	}
	return nil
}
