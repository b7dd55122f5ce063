package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/droidgo/droidgo/model/quant"
)

func sample(t testing.TB) []byte {
	t.Helper()
	w := NewWriter()
	w.Set("general.architecture", "spark2_5")
	w.Set("a.u8", uint8(7))
	w.Set("a.i8", int8(-3))
	w.Set("a.u16", uint16(300))
	w.Set("a.i16", int16(-300))
	w.Set("a.u32", uint32(70000))
	w.Set("a.i32", int32(-70000))
	w.Set("a.f32", float32(1e-6))
	w.Set("a.bool", true)
	w.Set("a.u64", uint64(1)<<40)
	w.Set("a.i64", int64(-1)<<40)
	w.Set("a.f64", 2.5)
	w.Set("a.strs", []string{"x", "", "héllo"})
	w.Set("a.bools", []bool{true, true, false})
	w.Set("a.i32s", []int32{1, -2, 3})
	w.Set("a.u8s", []uint8{1, 2})
	w.Set("a.f32s", []float32{0.5, 1.5})
	f32 := make([]byte, 4*3*2)
	for i := range f32 {
		f32[i] = byte(i)
	}
	w.AddTensor("t.f32", quant.F32, []int{3, 2}, f32)
	w.AddTensorFunc("t.q8", quant.Q8_0, []int{64}, func(b []byte) error {
		for i := range b {
			b[i] = 0xAB
		}
		return nil
	})
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRoundTrip(t *testing.T) {
	img := sample(t)
	f, err := OpenBytes(img)
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 3 || f.Alignment != 32 || f.DataOffset%32 != 0 {
		t.Errorf("header: version %d alignment %d data offset %d", f.Version, f.Alignment, f.DataOffset)
	}
	if f.Architecture() != "spark2_5" {
		t.Errorf("architecture %q", f.Architecture())
	}
	uints := map[string]uint64{"a.u8": 7, "a.u16": 300, "a.u32": 70000, "a.u64": 1 << 40}
	for k, want := range uints {
		if got, ok := f.Uint(k); !ok || got != want {
			t.Errorf("Uint(%s) = %d, %v; want %d", k, got, ok, want)
		}
	}
	for _, k := range []string{"a.i8", "a.i16", "a.i32", "a.i64", "a.str", "a.f32"} {
		if _, ok := f.Uint(k); ok {
			t.Errorf("Uint(%s) succeeded for a negative or non-integer value", k)
		}
	}
	if v, ok := f.Int("a.i32"); !ok || v != -70000 {
		t.Errorf("Int(a.i32) = %d, %v", v, ok)
	}
	if v, ok := f.Float("a.f32"); !ok || float32(v) != 1e-6 {
		t.Errorf("Float(a.f32) = %g, %v", v, ok)
	}
	if v, ok := f.Float("a.f64"); !ok || v != 2.5 {
		t.Errorf("Float(a.f64) = %g, %v", v, ok)
	}
	if v, ok := f.Bool("a.bool"); !ok || !v {
		t.Errorf("Bool = %v %v", v, ok)
	}
	if v, ok := f.Strings("a.strs"); !ok || !reflect.DeepEqual(v, []string{"x", "", "héllo"}) {
		t.Errorf("Strings = %q %v", v, ok)
	}
	if v, ok := f.Bools("a.bools"); !ok || !reflect.DeepEqual(v, []bool{true, true, false}) {
		t.Errorf("Bools = %v %v", v, ok)
	}
	if v, ok := f.Ints("a.i32s"); !ok || !reflect.DeepEqual(v, []int64{1, -2, 3}) {
		t.Errorf("Ints = %v %v", v, ok)
	}
	if v, ok := f.Ints("a.u8s"); !ok || !reflect.DeepEqual(v, []int64{1, 2}) {
		t.Errorf("Ints(u8s) = %v %v", v, ok)
	}
	if v, ok := f.Floats("a.f32s"); !ok || !reflect.DeepEqual(v, []float64{0.5, 1.5}) {
		t.Errorf("Floats = %v %v", v, ok)
	}
	if got := len(f.Keys()); got != 17 {
		t.Errorf("%d keys", got)
	}
	if f.Keys()[0] != "general.architecture" {
		t.Errorf("key order: %v", f.Keys())
	}
	tt, ok := f.Tensor("t.f32")
	if !ok || tt.Type != quant.F32 || !reflect.DeepEqual(tt.Dims, []int{3, 2}) || len(tt.Data) != 24 || tt.Data[5] != 5 {
		t.Errorf("t.f32 = %+v", tt)
	}
	tq, ok := f.Tensor("t.q8")
	if !ok || tq.Type != quant.Q8_0 || len(tq.Data) != 68 || tq.Data[0] != 0xAB || tq.Offset%32 != 0 {
		t.Errorf("t.q8 = %+v", tq)
	}
	if len(f.Tensors()) != 2 || f.TypeSummary() != "F32:1 Q8_0:1" {
		t.Errorf("tensors %d, summary %q", len(f.Tensors()), f.TypeSummary())
	}
}

func TestOpenFileMapsTensors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := os.WriteFile(path, sample(t), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tq, _ := f.Tensor("t.q8")
	if tq.Data[67] != 0xAB {
		t.Errorf("mapped data wrong")
	}
	if _, err := Open(filepath.Dir(path)); err == nil {
		t.Errorf("opening a directory succeeded")
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing.gguf")); err == nil {
		t.Errorf("opening a missing file succeeded")
	}
}

// header offsets in the sample image.
func TestMalformed(t *testing.T) {
	good := sample(t)
	le := binary.LittleEndian
	mod := func(f func(b []byte) []byte) []byte {
		return f(append([]byte(nil), good...))
	}
	// Offsets of the first tensor info: find the name in the image.
	ti := bytes.Index(good, []byte("t.f32")) + len("t.f32")
	cases := []struct {
		name string
		img  []byte
		want string
	}{
		{"empty", nil, "bad magic"},
		{"magic", mod(func(b []byte) []byte { b[0] = 'X'; return b }), "bad magic"},
		{"version 1", mod(func(b []byte) []byte { le.PutUint32(b[4:], 1); return b }), "unsupported GGUF version 1"},
		{"version 9", mod(func(b []byte) []byte { le.PutUint32(b[4:], 9); return b }), "unsupported GGUF version 9"},
		{"big-endian", mod(func(b []byte) []byte { binary.BigEndian.PutUint32(b[4:], 3); return b }), "big-endian GGUF"},
		{"huge tensor count", mod(func(b []byte) []byte { le.PutUint64(b[8:], 1<<60); return b }), "tensor count"},
		{"huge kv count", mod(func(b []byte) []byte { le.PutUint64(b[16:], 1<<60); return b }), "metadata count"},
		{"huge key length", mod(func(b []byte) []byte { le.PutUint64(b[24:], 1<<62); return b }), "runs past the end"},
		{"truncated header", good[:30], "larger than the rest"},
		{"truncated key", good[:300], "unexpected end of file"},
		{"truncated data", good[:len(good)-40], "runs past the end of the file"},
		{"unknown value type", mod(func(b []byte) []byte {
			i := bytes.Index(b, []byte("general.architecture")) + len("general.architecture")
			le.PutUint32(b[i:], 99)
			return b
		}), "unknown metadata value type 99"},
		{"zero dims", mod(func(b []byte) []byte { le.PutUint32(b[ti:], 0); return b }), "dimensions"},
		{"five dims", mod(func(b []byte) []byte { le.PutUint32(b[ti:], 5); return b }), "dimensions"},
		{"zero dim", mod(func(b []byte) []byte { le.PutUint64(b[ti+4:], 0); return b }), "invalid dimension"},
		{"huge dim", mod(func(b []byte) []byte { le.PutUint64(b[ti+4:], 1<<62); return b }), "invalid dimension"},
		{"unknown tensor type", mod(func(b []byte) []byte { le.PutUint32(b[ti+4+16:], 77); return b }), "unknown type 77"},
		{"unaligned offset", mod(func(b []byte) []byte { le.PutUint64(b[ti+4+16+4:], 3); return b }), "not aligned"},
		{"offset past EOF", mod(func(b []byte) []byte { le.PutUint64(b[ti+4+16+4:], 1<<40); return b }), "runs past the end"},
		{"row not multiple of block", mod(func(b []byte) []byte {
			i := bytes.Index(b, []byte("t.q8")) + len("t.q8")
			le.PutUint64(b[i+4:], 33)
			return b
		}), "not a multiple"},
		{"duplicate tensor", func() []byte {
			w := NewWriter()
			w.AddTensor("x", quant.F32, []int{1}, make([]byte, 4))
			w.AddTensor("x", quant.F32, []int{1}, make([]byte, 4))
			var buf bytes.Buffer
			w.WriteTo(&buf)
			return buf.Bytes()
		}(), "duplicate tensor"},
		{"duplicate key", func() []byte {
			b := sample(t)
			i := bytes.Index(b, []byte("a.u16"))
			copy(b[i:], "a.u32")
			return b
		}(), "duplicate metadata key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := OpenBytes(c.img)
			if err == nil {
				t.Fatalf("parsed: %d tensors", len(f.Tensors()))
			}
			if !errors.Is(err, ErrFormat) {
				t.Errorf("error %v does not wrap ErrFormat", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not mention %q", err, c.want)
			}
		})
	}
}

func FuzzOpen(f *testing.F) {
	f.Add(sample(f))
	f.Add([]byte("GGUF\x03\x00\x00\x00"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := OpenBytes(data)
		if err != nil {
			return
		}
		for _, tn := range g.Tensors() {
			block, size, ok := typeLayout(tn.Type)
			if !ok || tn.Dims[0]/block*size*tn.Rows() != len(tn.Data) {
				t.Fatalf("tensor %q: %d bytes for dims %v type %s", tn.Name, len(tn.Data), tn.Dims, tn.Type)
			}
		}
		for _, k := range g.Keys() {
			if _, ok := g.Value(k); !ok {
				t.Fatalf("key %q listed but missing", k)
			}
		}
	})
}

func TestVersion2(t *testing.T) {
	img := sample(t)
	binary.LittleEndian.PutUint32(img[4:], 2)
	f, err := OpenBytes(img)
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 2 || len(f.Tensors()) != 2 {
		t.Errorf("version %d, %d tensors", f.Version, len(f.Tensors()))
	}
}

func TestCustomAlignment(t *testing.T) {
	w := NewWriter()
	w.Set("general.alignment", uint32(64))
	w.AddTensor("a", quant.F32, []int{3}, make([]byte, 12))
	w.AddTensor("b", quant.F32, []int{5}, make([]byte, 20))
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := OpenBytes(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := f.Tensor("b")
	if f.Alignment != 64 || f.DataOffset%64 != 0 || b.Offset != 64 {
		t.Errorf("alignment %d, data offset %d, b at %d", f.Alignment, f.DataOffset, b.Offset)
	}
	w.Set("general.alignment", uint32(48))
	buf.Reset()
	w.WriteTo(&buf)
	if _, err := OpenBytes(buf.Bytes()); err == nil || !strings.Contains(err.Error(), "power-of-two") {
		t.Errorf("alignment 48 accepted: %v", err)
	}
}
