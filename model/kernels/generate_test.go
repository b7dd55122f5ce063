package kernels

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGenerated: every unrolled assembly file, and the Go constants of the
// arm64 packed layouts, is what its generator in asmgen/ writes (run go
// generate after editing one), on every host: the generators are Python
// and only write text.
func TestGenerated(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("DROIDGO_REQUIRE_PYTHON") == "1" {
			t.Fatal("DROIDGO_REQUIRE_PYTHON=1 but python3 is not installed")
		}
		t.Skip("python3 not installed: the generated assembly is NOT checked against its generators")
	}
	gens, _ := filepath.Glob("asmgen/gen_*.py")
	if len(gens) < 12 {
		t.Fatalf("%d generators in asmgen, want the 12 arm64 and AMX ones", len(gens))
	}
	for _, g := range gens {
		dir := t.TempDir()
		if out, err := exec.Command(py, g, dir).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", g, err, out)
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*"))
		if len(files) != 1 {
			t.Errorf("%s wrote %d files, want 1", g, len(files))
		}
		for _, f := range files {
			want, err := os.ReadFile(filepath.Base(f))
			if err != nil {
				t.Fatalf("%s writes %s, which is not in the package: %v", g, filepath.Base(f), err)
			}
			if got, _ := os.ReadFile(f); !bytes.Equal(got, want) {
				t.Errorf("%s differs from what %s writes (run go generate ./model/kernels)", filepath.Base(f), g)
			}
		}
	}
}
