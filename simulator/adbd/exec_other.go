//go:build !linux

package adbd

import "errors"

// errNoPrograms is the error of a system that cannot run programs for the
// fake.
var errNoPrograms = errors.New("the fake device runs programs on Linux only")

func (s *Server) execProgram(st *stream, line string, argv []string, v2, pty bool, term string) {
	o := output{}
	o.stderr.WriteString("/system/bin/sh: " + argv[0] + ": " + errNoPrograms.Error() + "\n")
	if v2 {
		writePacket(st, idStderr, o.stderr.Bytes())
		writePacket(st, idExit, []byte{126})
		return
	}
	st.Write(o.stderr.Bytes())
}
