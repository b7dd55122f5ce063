//go:build !purego

package kernels

import (
	"os"
	"testing"
)

// TestBF16Detect checks the FEAT_BF16 detection against what the emulated
// CPU model has (the qemu test says: -cpu max has it, cortex-a76 and
// cortex-a53 do not), and that the i8mm level installs the BFMMLA kernel
// exactly when it is there.
func TestBF16Detect(t *testing.T) {
	want := os.Getenv("DROIDGO_WANT_BF16")
	if want == "" {
		t.Skip("DROIDGO_WANT_BF16 not set")
	}
	if got := hasBF16(); got != (want == "1") {
		t.Fatalf("hasBF16() = %v, want %s", got, want)
	}
	if ISA() == "i8mm" && (cur.bf16mm != nil) != (want == "1") {
		t.Fatalf("i8mm level: BFMMLA kernel installed = %v, FEAT_BF16 = %s", cur.bf16mm != nil, want)
	}
}
