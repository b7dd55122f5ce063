package main

import (
	"io"
	"os"

	"golang.org/x/term"
)

// writerIsTerminal reports whether w is a terminal. TTY detection lives here only.
func writerIsTerminal(w io.Writer) bool {
	w = terminalOut(w)
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// terminalOut is the file under w, for the terminal UI, which needs the
// terminal itself (its size, raw mode) rather than a wrapper.
func terminalOut(w io.Writer) io.Writer {
	if c, ok := w.(*checkedWriter); ok {
		return c.w
	}
	return w
}
