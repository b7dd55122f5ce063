package mmap

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestFile(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
		size int64
	}{
		{"whole", []byte("GGUF and more"), 13},
		{"prefix", []byte("GGUF and more"), 4},
		{"empty", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f")
			if err := os.WriteFile(path, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			b, unmap, err := File(f, tc.size)
			f.Close() // the mapping outlives the descriptor
			if err != nil {
				t.Fatal(err)
			}
			if want := tc.data[:tc.size]; !bytes.Equal(b, want) {
				t.Errorf("mapped %q, want %q", b, want)
			}
			if err := unmap(); err != nil {
				t.Errorf("unmap: %v", err)
			}
		})
	}
}

func TestFileErrors(t *testing.T) {
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, _, err := File(f, -1); err == nil {
		t.Error("File(-1) succeeded")
	}
	dir, err := os.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	if _, _, err := File(dir, 4096); err == nil {
		t.Error("mapping a directory succeeded")
	}
}
