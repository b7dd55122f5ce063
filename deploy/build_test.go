package deploy

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// TestBuild builds the phone's droidgo from this checkout, as deploy does
// without --binary, and checks it is the arm64 program deploy accepts;
// deploy refuses a program for this computer.
func TestBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPED, NOT PASSED: cross-compiling droidgo is slow; -short")
	}
	wd, _ := os.Getwd()
	mod, err := FindModule(wd)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := FindModule(t.TempDir()); !errors.Is(err, ErrNoCheckout) {
		t.Errorf("FindModule(temp) = %v, want ErrNoCheckout", err)
	}
	out := filepath.Join(t.TempDir(), "droidgo")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := Build(ctx, mod, out); err != nil {
		t.Fatal(err)
	}
	if err := CheckBinary(out); err != nil {
		t.Errorf("the android/arm64 build: %v", err)
	}
	self, _ := os.Executable()
	if err := CheckBinary(self); err == nil && !isArm64() {
		t.Errorf("CheckBinary accepts %s, a program for this computer", self)
	}
}

func isArm64() bool { return runtime.GOARCH == "arm64" }
