package adb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// ErrADBNotInstalled reports that the adb binary, needed to start a server,
// is not in PATH.
var ErrADBNotInstalled = errors.New("adb is not installed")

// StartServer starts the adb server for c.Addr with the adb binary, as
// `adb -P PORT start-server` does, and waits until it answers.
func (c *Client) StartServer(ctx context.Context) error {
	bin := c.ADBPath
	if bin == "" {
		p, err := exec.LookPath("adb")
		if err != nil {
			return fmt.Errorf("%w at %s and %w to start it: install Android platform-tools (Debian/Ubuntu: sudo apt-get install adb) or start a server yourself", ErrServerNotRunning, c.Addr, ErrADBNotInstalled)
		}
		bin = p
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	args := []string{"start-server"}
	if p := c.port(); p != "" {
		args = []string{"-P", p, "start-server"}
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	// The server must not inherit a socket setting that points elsewhere.
	env := os.Environ()
	kept := env[:0]
	for _, e := range env {
		if !strings.HasPrefix(e, "ADB_SERVER_SOCKET=") {
			kept = append(kept, e)
		}
	}
	cmd.Env = kept
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// The forked server keeps the pipes open; don't wait on them forever.
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Run(); err != nil && !errors.Is(err, exec.ErrWaitDelay) {
		return fmt.Errorf("%w at %s and `%s %s` failed: %v: %s", ErrServerNotRunning, c.Addr, bin, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	for {
		cc, err := c.dialOnce(ctx)
		if err == nil {
			cc.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w at %s: started it with %s but it does not answer", ErrServerNotRunning, c.Addr, bin)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
