package adbd

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// hangupGrace is how long a program has to end after SIGHUP before it is
// killed.
const hangupGrace = 20 * time.Second

// execProgram runs a program pushed to the phone for the shell service,
// with a pty (the program's controlling terminal, its size from the
// client's window-size packets) or with pipes, and streams its output
// until it exits; the exit status ends a v2 stream. When the client goes
// (the connection drops, adb is killed) the program gets SIGHUP, from the
// kernel when it has the pty, as adbd's subprocesses do.
func (s *Server) execProgram(st *stream, line string, argv []string, v2, pty bool, term string) {
	service := "shell"
	if v2 {
		service = "shell,v2"
	}
	c := Command{Service: service, Line: line, Argv: argv, Time: time.Now()}
	args := s.hostArgs(argv)
	cmd := exec.Command(args[0], args[1:]...)
	home := s.fs.host(tmpDir)
	cmd.Env = append(s.progs.land.Env(), "TERM="+term, "HOME="+home, "TMPDIR="+home)
	cmd.Dir = s.fs.host("/")
	out := func(id byte, b []byte) error {
		if v2 {
			return writePacket(st, id, b)
		}
		_, err := st.Write(b)
		return err
	}
	fail := func(err error) {
		out(idStderr, []byte(fmt.Sprintf("/system/bin/sh: %s: can't execute: %v\n", argv[0], err)))
		if v2 {
			writePacket(st, idExit, []byte{126})
		}
		c.Exit = 126
		s.record(c)
	}

	var stdin io.WriteCloser
	var master *os.File
	var readers []io.Reader
	if pty {
		m, slave, err := openPTY()
		if err != nil {
			fail(err)
			return
		}
		defer slave.Close()
		master = m
		setSize(master, 24, 80)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		stdin, readers = master, []io.Reader{master}
	} else {
		// Pipes of its own, not cmd's: Wait would close those under the
		// readers, losing the program's last output.
		var err error
		if stdin, err = cmd.StdinPipe(); err != nil {
			fail(err)
			return
		}
		var ends []*os.File
		for range 2 {
			pr, pw, err := os.Pipe()
			if err != nil {
				fail(err)
				return
			}
			defer pr.Close()
			defer pw.Close()
			readers = append(readers, pr)
			ends = append(ends, pw)
		}
		cmd.Stdout, cmd.Stderr = ends[0], ends[1]
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	if err := cmd.Start(); err != nil {
		if master != nil {
			master.Close()
		}
		fail(err)
		return
	}
	// The program holds the slave or the pipes' write ends now.
	if pty {
		cmd.Stdin.(*os.File).Close()
	} else {
		cmd.Stdout.(*os.File).Close()
		cmd.Stderr.(*os.File).Close()
	}

	// Output, each reader to its packet kind, until EOF (EIO for a pty
	// whose program ended).
	var wg sync.WaitGroup
	var wmu sync.Mutex
	for i, r := range readers {
		id := byte(idStdout)
		if i == 1 {
			id = idStderr
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 32<<10)
			for {
				n, err := r.Read(buf)
				if n > 0 {
					wmu.Lock()
					out(id, buf[:n])
					wmu.Unlock()
				}
				if err != nil {
					return
				}
			}
		}()
	}

	// Input: the client's stdin and window sizes, until it closes stdin
	// or goes.
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		if !v2 {
			io.Copy(stdin, st)
			if !pty {
				stdin.Close()
			}
			return
		}
		var hdr [5]byte
		for {
			if _, err := io.ReadFull(st, hdr[:]); err != nil {
				return
			}
			n := binary.LittleEndian.Uint32(hdr[1:])
			if n > maxPayload {
				return
			}
			data := make([]byte, n)
			if _, err := io.ReadFull(st, data); err != nil {
				return
			}
			switch hdr[0] {
			case idStdin:
				stdin.Write(data)
			case idCloseStdin:
				if !pty {
					stdin.Close()
				}
			case idWindowChange:
				if master != nil {
					if rows, cols, ok := parseWindowSize(string(data)); ok {
						setSize(master, rows, cols)
					}
				}
			}
		}
	}()

	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-exited:
	case <-st.closed:
		// The client went: hang up, as the end of a session does.
		if master != nil {
			master.Close()
		}
		syscall.Kill(-cmd.Process.Pid, syscall.SIGHUP)
		select {
		case werr = <-exited:
		case <-time.After(hangupGrace):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			werr = <-exited
		}
	}
	// The program ended: what it wrote last is still to be read, until
	// EOF (EIO for a pty); a child it left holding them is not waited for.
	for _, r := range readers {
		r.(*os.File).SetReadDeadline(time.Now().Add(2 * time.Second))
	}
	wg.Wait()
	if master != nil {
		master.Close()
	}
	c.Exit = exitStatus(werr)
	if v2 {
		writePacket(st, idExit, []byte{byte(c.Exit)})
	}
	s.record(c)
}

// exitStatus is the shell's $? for a program that ended with err.
func exitStatus(err error) int {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		if err != nil {
			return 126
		}
		return 0
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ee.ExitCode() & 0xff
}

// openPTY opens a new pseudo-terminal pair.
func openPTY() (master, slave *os.File, err error) {
	// Non-blocking, so that reads of the master take deadlines.
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open /dev/ptmx: %w", err)
	}
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		unix.Close(fd)
		return nil, nil, fmt.Errorf("unlock pty: %w", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		unix.Close(fd)
		return nil, nil, fmt.Errorf("pty number: %w", err)
	}
	master = os.NewFile(uintptr(fd), "/dev/ptmx")
	slave, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	return master, slave, nil
}

// setSize sets the terminal size of the pty (through SyscallConn: Fd
// would make the master blocking).
func setSize(f *os.File, rows, cols int) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: uint16(rows), Col: uint16(cols)})
	})
}

// parseWindowSize reads a kIdWindowSizeChange packet:
// "ROWSxCOLS,XPIXELSxYPIXELS\0".
func parseWindowSize(s string) (rows, cols int, ok bool) {
	s = strings.TrimRight(s, "\x00")
	cells, _, _ := strings.Cut(s, ",")
	r, c, found := strings.Cut(cells, "x")
	if !found {
		return 0, 0, false
	}
	rows, err1 := strconv.Atoi(r)
	cols, err2 := strconv.Atoi(c)
	if err1 != nil || err2 != nil || rows <= 0 || cols <= 0 || rows > 10000 || cols > 10000 {
		return 0, 0, false
	}
	return rows, cols, true
}
