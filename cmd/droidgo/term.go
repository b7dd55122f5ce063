package main

import (
	"io"
	"os"

	"golang.org/x/term"
)

// writerIsTerminal reports whether w is a terminal. TTY detection lives here only.
func writerIsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
