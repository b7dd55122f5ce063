package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func sample(t testing.TB) []byte {
	t.Helper()
	var buf bytes.Buffer
	err := Write(&buf, []Tensor{
		{Name: "a", DType: "BF16", Shape: []int{2, 3}, Data: make([]byte, 12)},
		{Name: "b", DType: "F32", Shape: []int{4}, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}},
	}, map[string]string{"format": "pt"})
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRoundTrip(t *testing.T) {
	img := sample(t)
	path := filepath.Join(t.TempDir(), "m.safetensors")
	if err := os.WriteFile(path, img, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Metadata["format"] != "pt" || len(f.Tensors()) != 2 {
		t.Fatalf("metadata %v, %d tensors", f.Metadata, len(f.Tensors()))
	}
	b, ok := f.Tensor("b")
	if !ok || b.DType != "F32" || len(b.Shape) != 1 || b.Shape[0] != 4 || b.Data[15] != 16 {
		t.Errorf("b = %+v", b)
	}
	if binary.LittleEndian.Uint64(img)%8 != 0 {
		t.Errorf("header not padded to 8 bytes")
	}
}

func TestMalformed(t *testing.T) {
	good := sample(t)
	hdr := func(s string) []byte {
		b := make([]byte, 8, 8+len(s)+16)
		binary.LittleEndian.PutUint64(b, uint64(len(s)))
		return append(append(b, s...), make([]byte, 16)...)
	}
	cases := []struct {
		name string
		img  []byte
		want string
	}{
		{"short", good[:5], "too short"},
		{"huge header", func() []byte { b := append([]byte(nil), good...); binary.LittleEndian.PutUint64(b, 1<<60); return b }(), "header length"},
		{"bad json", hdr("{nope"), "header"},
		{"bad dtype", hdr(`{"x":{"dtype":"Q9","shape":[1],"data_offsets":[0,1]}}`), "unknown dtype"},
		{"past end", hdr(`{"x":{"dtype":"F32","shape":[100],"data_offsets":[0,400]}}`), "run past the end"},
		{"shape mismatch", hdr(`{"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`), "needs 12 bytes"},
		{"negative dim", hdr(`{"x":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}`), "invalid shape"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(c.img)
			if err == nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want ErrFormat mentioning %q", err, c.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add(sample(f))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		sf, err := Parse(data)
		if err != nil {
			return
		}
		for _, tn := range sf.Tensors() {
			n := dtypeSize[tn.DType]
			for _, d := range tn.Shape {
				n *= d
			}
			if n != len(tn.Data) {
				t.Fatalf("tensor %q: %d bytes for shape %v", tn.Name, len(tn.Data), tn.Shape)
			}
		}
	})
}

// TestCheckpointLayouts parses headers as real checkpoints write them:
// metadata with non-string values, FP8 and unsigned dtypes, scalars and
// empty tensors, and header padding with spaces.
func TestCheckpointLayouts(t *testing.T) {
	hdr := func(s string, body int) []byte {
		for len(s)%8 != 0 {
			s += " "
		}
		b := make([]byte, 8, 8+len(s)+body)
		binary.LittleEndian.PutUint64(b, uint64(len(s)))
		return append(append(b, s...), make([]byte, body)...)
	}
	img := hdr(`{"__metadata__":{"format":"pt","total_size":1234,"nested":{"a":1}},`+
		`"w8":{"dtype":"F8_E4M3","shape":[2,2],"data_offsets":[0,4]},`+
		`"u":{"dtype":"U32","shape":[1],"data_offsets":[4,8]},`+
		`"scalar":{"dtype":"BF16","shape":[],"data_offsets":[8,10]},`+
		`"empty":{"dtype":"F32","shape":[0,4],"data_offsets":[10,10]}}`, 10)
	f, err := Parse(img)
	if err != nil {
		t.Fatal(err)
	}
	if f.Metadata["format"] != "pt" || len(f.Metadata) != 1 {
		t.Errorf("metadata %v", f.Metadata)
	}
	for name, size := range map[string]int{"w8": 4, "u": 4, "scalar": 2, "empty": 0} {
		if tn, ok := f.Tensor(name); !ok || len(tn.Data) != size {
			t.Errorf("%s: %+v", name, tn)
		}
	}
	if _, err := Parse(hdr(`{"__metadata__":[1]}`, 0)); err == nil || !errors.Is(err, ErrFormat) {
		t.Errorf("metadata array accepted: %v", err)
	}
}
