// Command droidgo drives an Android phone with a small on-device language model.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/droidgo/droidgo/internal/termsafe"
)

func main() {
	// A hangup (the terminal or the adb connection of a run on the phone
	// went) is a cancel too: the run ends with its recording finished.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	os.Exit(execute(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// exitError carries a specific exit code out of a command. Its message, when
// not empty, is printed as the one-sentence error.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageErr marks err as a usage or configuration error (exit code 2).
func usageErr(err error) error { return &exitError{code: 2, err: err} }

// exitCode ends the command with code without printing anything more.
func exitCode(code int) error { return &exitError{code: code} }

// codeFor maps an error returned by a command to the process exit code.
func codeFor(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}

func printErr(stderr interface{ Write([]byte) (int, error) }, err error) {
	msg := err.Error()
	if msg == "" {
		return
	}
	// Messages quote servers, devices and files.
	fmt.Fprintf(stderr, "droidgo: %s\n", termsafe.String(msg))
}
