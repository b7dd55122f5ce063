package deploy

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Module is droidgo's Go module path.
const Module = "github.com/droidgo/droidgo"

// ErrNoCheckout says there is no droidgo source or no Go to build the
// phone's droidgo from.
var ErrNoCheckout = errors.New("no droidgo checkout with Go to build the phone's droidgo from")

// FindModule returns the root of the droidgo checkout that dir is in (the
// directory of the go.mod that declares Module).
func FindModule(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if mod, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil {
			line, _, _ := bytes.Cut(mod, []byte("\n"))
			if strings.TrimSpace(strings.TrimPrefix(string(line), "module")) == Module {
				return d, nil
			}
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("%w: %s is not inside one", ErrNoCheckout, dir)
		}
	}
}

// Build builds droidgo for android/arm64 from the checkout at module into
// out, with the go tool found on PATH (static: CGO_ENABLED=0).
func Build(ctx context.Context, module, out string) error {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("%w: the go tool is not on PATH", ErrNoCheckout)
	}
	// The flags of CI's cross-compile check, so its build cache serves.
	cmd := exec.CommandContext(ctx, goTool, "build", "-o", out, "./cmd/droidgo")
	cmd.Dir = module
	cmd.Env = append(os.Environ(), "GOOS=android", "GOARCH=arm64", "CGO_ENABLED=0")
	var msg bytes.Buffer
	cmd.Stdout, cmd.Stderr = &msg, &msg
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build droidgo for android/arm64 in %s: %v\n%s", module, err, tail(msg.String(), 20))
	}
	return nil
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// CheckBinary refuses a file that is not a 64-bit ARM ELF program, the
// only kind a phone of today runs.
func CheckBinary(name string) error {
	f, err := elf.Open(name)
	if err != nil {
		return fmt.Errorf("%s is not a program for the phone (an android/arm64 or linux/arm64 ELF file): %w", name, err)
	}
	defer f.Close()
	if f.Class != elf.ELFCLASS64 || f.Machine != elf.EM_AARCH64 {
		return fmt.Errorf("%s is a %s %s program, not arm64: build droidgo with GOOS=android GOARCH=arm64 CGO_ENABLED=0 go build ./cmd/droidgo", name, f.Class, f.Machine)
	}
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return fmt.Errorf("%s is an ELF %s, not a program", name, f.Type)
	}
	return nil
}
