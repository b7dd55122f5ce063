package adbd

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// Shell protocol v2 packet ids.
const (
	idStdin        = 0
	idStdout       = 1
	idStderr       = 2
	idExit         = 3
	idCloseStdin   = 4
	idWindowChange = 5
)

// handler returns the function serving service, or nil to refuse it.
func (s *Server) handler(service string) func(*stream) {
	switch {
	case service == "sync:":
		return s.serveSync
	case strings.HasPrefix(service, "exec:"):
		cmd := strings.TrimPrefix(service, "exec:")
		return func(st *stream) { s.serveExec(st, cmd) }
	case strings.HasPrefix(service, "shell:"), strings.HasPrefix(service, "shell,"):
		args, cmd, _ := strings.Cut(strings.TrimPrefix(service, "shell"), ":")
		v2, pty := false, cmd == "" // adbd: a pty when the command is empty
		term := "dumb"
		for _, a := range strings.Split(strings.TrimPrefix(args, ","), ",") {
			switch {
			case a == "v2":
				v2 = true
			case a == "raw":
				pty = false
			case a == "pty":
				pty = true
			case strings.HasPrefix(a, "TERM="):
				term = strings.TrimPrefix(a, "TERM=")
			}
		}
		if v2 && !s.hasFeature("shell_v2") {
			return nil
		}
		return func(st *stream) {
			if argv, ok := s.program(cmd); ok {
				s.execProgram(st, cmd, argv, v2, pty, term)
				return
			}
			s.serveShell(st, cmd, v2, pty)
		}
	}
	return nil
}

// output collects a command's stdout and stderr.
type output struct {
	stdout, stderr bytes.Buffer
}

func (s *Server) serveExec(st *stream, line string) {
	var o output
	s.runLine("exec", line, &o)
	st.Write(o.stdout.Bytes())
	st.Write(o.stderr.Bytes())
}

func (s *Server) serveShell(st *stream, line string, v2, pty bool) {
	if line == "" {
		s.interactive(st, v2, pty)
		return
	}
	var o output
	service := "shell"
	if v2 {
		service = "shell,v2"
	}
	code := s.runLine(service, line, &o)
	stdout, stderr := o.stdout.Bytes(), o.stderr.Bytes()
	if pty {
		// A pty merges stderr and turns \n into \r\n.
		stdout = crlf(append(stdout, stderr...))
		stderr = nil
	}
	if !v2 {
		st.Write(stdout)
		st.Write(stderr)
		return
	}
	writePacket(st, idStdout, stdout)
	writePacket(st, idStderr, stderr)
	writePacket(st, idExit, []byte{byte(code)})
}

func crlf(b []byte) []byte { return bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n")) }

func writePacket(w io.Writer, id byte, data []byte) error {
	if len(data) == 0 && id != idExit {
		return nil
	}
	hdr := make([]byte, 5, 5+len(data))
	hdr[0] = id
	binary.LittleEndian.PutUint32(hdr[1:], uint32(len(data)))
	_, err := w.Write(append(hdr, data...))
	return err
}

// interactive is `adb shell` without a command: read lines, run each, print
// a prompt. With a pty it echoes what is typed, as a terminal would.
func (s *Server) interactive(st *stream, v2, pty bool) {
	out := func(b []byte) {
		if len(b) == 0 {
			return
		}
		if pty {
			b = crlf(b)
		}
		if v2 {
			writePacket(st, idStdout, b)
		} else {
			st.Write(b)
		}
	}
	// sh prints prompts only to a terminal.
	var prompt []byte
	if pty {
		prompt = []byte(s.opts.Device + ":/ $ ")
	}
	out(prompt)
	var line []byte
	code := 0
	in := stdinReader(st, v2)
	buf := make([]byte, 4096)
	for {
		n, err := in.Read(buf)
		for _, c := range buf[:n] {
			switch {
			case c == '\r' || c == '\n':
				if pty {
					out([]byte("\n"))
				}
				cmd := string(line)
				line = line[:0]
				if w, err := Split(cmd); err == nil && len(w) > 0 && w[0] == "exit" {
					code = 0
					if len(w) > 1 {
						code, _ = strconv.Atoi(w[1])
					}
					if v2 {
						writePacket(st, idExit, []byte{byte(code)})
					}
					return
				}
				var o output
				if strings.TrimSpace(cmd) != "" {
					code = s.runLine("shell-interactive", cmd, &o)
				}
				out(o.stdout.Bytes())
				out(o.stderr.Bytes())
				out(prompt)
			case c == 0x7f || c == 0x08:
				if len(line) > 0 {
					line = line[:len(line)-1]
					if pty {
						out([]byte("\b \b"))
					}
				}
			case c == 0x04 && len(line) == 0: // ^D
				if v2 {
					writePacket(st, idExit, []byte{byte(code)})
				}
				return
			default:
				line = append(line, c)
				if pty {
					out([]byte{c})
				}
			}
		}
		if err != nil {
			if v2 {
				writePacket(st, idExit, []byte{byte(code)})
			}
			return
		}
	}
}

// stdinReader returns the stdin bytes of a stream: raw for v1, the data of
// kIdStdin packets for v2 (EOF at kIdCloseStdin).
func stdinReader(st *stream, v2 bool) io.Reader {
	if !v2 {
		return st
	}
	pr, pw := io.Pipe()
	go func() {
		var hdr [5]byte
		for {
			if _, err := io.ReadFull(st, hdr[:]); err != nil {
				pw.CloseWithError(err)
				return
			}
			n := binary.LittleEndian.Uint32(hdr[1:])
			if n > maxPayload {
				pw.CloseWithError(errors.New("oversized shell packet"))
				return
			}
			data := make([]byte, n)
			if _, err := io.ReadFull(st, data); err != nil {
				pw.CloseWithError(err)
				return
			}
			switch hdr[0] {
			case idStdin:
				if _, err := pw.Write(data); err != nil {
					return
				}
			case idCloseStdin:
				pw.Close()
				return
			}
		}
	}()
	return pr
}

// runLine splits line with the strict splitter, runs it, logs it and returns
// the exit status.
func (s *Server) runLine(service, line string, o *output) int {
	c := Command{Service: service, Line: line, Time: time.Now()}
	argv, err := Split(line)
	switch {
	case err != nil:
		c.Rejected = err.Error()
		fmt.Fprintf(&o.stderr, "/system/bin/sh: syntax refused by the fake device: %v\n", err)
		c.Exit = 2
	case len(argv) == 0:
		c.Exit = 0
	default:
		c.Argv = argv
		c.Exit = s.run(argv, o)
	}
	s.record(c)
	return c.Exit
}

// Sync protocol.

const maxSyncPath = 1024

func (s *Server) serveSync(st *stream) {
	var hdr [8]byte
	for {
		if _, err := io.ReadFull(st, hdr[:]); err != nil {
			return
		}
		id := string(hdr[:4])
		n := binary.LittleEndian.Uint32(hdr[4:])
		if id == "QUIT" {
			return
		}
		if n > maxSyncPath {
			syncFail(st, "path too long")
			return
		}
		pb := make([]byte, n)
		if _, err := io.ReadFull(st, pb); err != nil {
			return
		}
		p := string(pb)
		switch id {
		case "STAT":
			var b [16]byte
			copy(b[:], "STAT")
			if f, ok := s.fs.get(p); ok {
				binary.LittleEndian.PutUint32(b[4:], statMode(f))
				binary.LittleEndian.PutUint32(b[8:], uint32(f.size))
				binary.LittleEndian.PutUint32(b[12:], uint32(f.mtime.Unix()))
			}
			st.Write(b[:])
		case "STA2", "LST2":
			if !s.hasFeature("stat_v2") {
				syncFail(st, "unknown command "+id)
				return
			}
			var b [72]byte
			copy(b[:], id)
			if f, ok := s.fs.get(p); ok {
				binary.LittleEndian.PutUint64(b[16:], uint64(len(p))) // ino: any stable number
				binary.LittleEndian.PutUint32(b[24:], statMode(f))
				binary.LittleEndian.PutUint32(b[28:], 1)
				binary.LittleEndian.PutUint32(b[32:], 2000)
				binary.LittleEndian.PutUint32(b[36:], 9997)
				binary.LittleEndian.PutUint64(b[40:], uint64(f.size))
				for _, off := range []int{48, 56, 64} {
					binary.LittleEndian.PutUint64(b[off:], uint64(f.mtime.Unix()))
				}
			} else {
				binary.LittleEndian.PutUint32(b[4:], 2) // ENOENT
			}
			st.Write(b[:])
		case "LIST":
			names, _ := s.fs.list(p)
			for _, name := range names {
				f, _ := s.fs.get(strings.TrimSuffix(clean(p), "/") + "/" + name)
				rec := make([]byte, 20+len(name))
				copy(rec, "DENT")
				binary.LittleEndian.PutUint32(rec[4:], statMode(f))
				binary.LittleEndian.PutUint32(rec[8:], uint32(f.size))
				binary.LittleEndian.PutUint32(rec[12:], uint32(f.mtime.Unix()))
				binary.LittleEndian.PutUint32(rec[16:], uint32(len(name)))
				copy(rec[20:], name)
				st.Write(rec)
			}
			var done [20]byte
			copy(done[:], "DONE")
			st.Write(done[:])
		case "RECV":
			f, ok := s.fs.get(p)
			if !ok {
				syncFail(st, "open failed: No such file or directory")
				return
			}
			if f.dir {
				syncFail(st, "read failed: Is a directory")
				return
			}
			data, err := s.fs.read(p)
			if err != nil {
				syncFail(st, "read failed: "+errText(err))
				return
			}
			for len(data) > 0 {
				chunk := min(len(data), 64<<10)
				rec := make([]byte, 8+chunk)
				copy(rec, "DATA")
				binary.LittleEndian.PutUint32(rec[4:], uint32(chunk))
				copy(rec[8:], data[:chunk])
				if _, err := st.Write(rec); err != nil {
					return
				}
				data = data[chunk:]
			}
			st.Write([]byte{'D', 'O', 'N', 'E', 0, 0, 0, 0})
		case "SEND":
			if !s.recvFile(st, p) {
				return
			}
		default:
			syncFail(st, "unknown command "+strconv.Quote(id))
			return
		}
	}
}

// recvFile handles SEND "path,mode": DATA chunks until DONE, then OKAY.
// The data goes to a file beside the phone's files and takes the path's
// place at DONE, so a transfer cut short leaves the path as it was.
func (s *Server) recvFile(st *stream, spec string) bool {
	p, modeStr := spec, "33188"
	if i := strings.LastIndexByte(spec, ','); i >= 0 {
		p, modeStr = spec[:i], spec[i+1:]
	}
	mode, err := strconv.ParseUint(modeStr, 10, 32)
	if err != nil {
		syncFail(st, "bad mode "+strconv.Quote(modeStr))
		return false
	}
	tmp, err := os.CreateTemp(s.fs.root, ".sync-")
	if err != nil {
		syncFail(st, "remote couldn't create file: "+errText(err))
		return false
	}
	defer func() {
		tmp.Close()
		os.Remove(tmp.Name())
	}()
	var hdr [8]byte
	for {
		if _, err := io.ReadFull(st, hdr[:]); err != nil {
			return false
		}
		n := binary.LittleEndian.Uint32(hdr[4:])
		switch string(hdr[:4]) {
		case "DATA":
			if n > 64<<10 {
				syncFail(st, "invalid data message: too long")
				return false
			}
			take, cut := s.takeSync(int64(n))
			if _, err := io.CopyN(tmp, st, take); err != nil {
				return false
			}
			if cut {
				st.c.nc.Close() // the cable is pulled
				return false
			}
		case "DONE":
			if s.takeCorrupt() {
				var b [1]byte
				if n, _ := tmp.ReadAt(b[:], 0); n == 1 {
					b[0] ^= 0xff
					tmp.WriteAt(b[:], 0)
				}
			}
			// adbd copies the user permission bits to group and other.
			perm := uint32(mode) & 0o700
			perm |= perm>>3 | perm>>6
			if err := s.fs.place(tmp, p, perm); err != nil {
				syncFail(st, "remote couldn't create file: "+errText(err))
				return false
			}
			st.Write([]byte{'O', 'K', 'A', 'Y', 0, 0, 0, 0})
			return true
		default:
			syncFail(st, "invalid data message")
			return false
		}
	}
}

func syncFail(w io.Writer, msg string) {
	b := make([]byte, 8+len(msg))
	copy(b, "FAIL")
	binary.LittleEndian.PutUint32(b[4:], uint32(len(msg)))
	copy(b[8:], msg)
	w.Write(b)
}
