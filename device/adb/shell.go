package adb

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
)

// Shell protocol v2 packet ids.
const (
	idStdin      = 0
	idStdout     = 1
	idStderr     = 2
	idExit       = 3
	idCloseStdin = 4
	idWindowSize = 5
)

// maxOutput bounds what one command may return, so a runaway command cannot
// exhaust memory.
const maxOutput = 64 << 20

// ShellResult is what a shell command produced. With shell v1 the exit code is
// unknown (-1) and stderr is merged into Stdout.
type ShellResult struct {
	Stdout []byte
	Stderr []byte
	Exit   int
	V2     bool
}

// Output returns stdout and stderr together.
func (r ShellResult) Output() string { return string(r.Stdout) + string(r.Stderr) }

// Shell runs command with the device's shell. With v2 it uses the shell
// protocol (exit code, separate stderr); otherwise shell v1. The command is
// passed to /system/bin/sh as is: callers quote every argument (see Quote).
func (c *Client) Shell(ctx context.Context, serial, command string, v2 bool) (ShellResult, error) {
	if v2 {
		return c.shellV2(ctx, serial, command)
	}
	cc, err := c.open(ctx, serial, "shell:"+command)
	if err != nil {
		return ShellResult{}, wrapCmd("shell", command, err)
	}
	defer cc.Close()
	out, err := readAllLimited(cc)
	if err != nil {
		return ShellResult{}, wrapCmd("shell", command, deviceLost(serial, cc.wrap(err)))
	}
	return ShellResult{Stdout: out, Exit: -1}, nil
}

func (c *Client) shellV2(ctx context.Context, serial, command string) (ShellResult, error) {
	cc, err := c.open(ctx, serial, "shell,v2,raw:"+command)
	if err != nil {
		return ShellResult{}, wrapCmd("shell", command, err)
	}
	defer cc.Close()
	// No stdin: say so at once, or a command that reads stdin would wait.
	if _, err := cc.Write([]byte{idCloseStdin, 0, 0, 0, 0}); err != nil {
		return ShellResult{}, wrapCmd("shell", command, deviceLost(serial, cc.wrap(err)))
	}
	res, err := ReadShellV2(cc)
	if err != nil {
		return res, wrapCmd("shell", command, deviceLost(serial, cc.wrap(err)))
	}
	return res, nil
}

// ReadShellV2 reads shell protocol packets until the exit packet.
func ReadShellV2(r io.Reader) (ShellResult, error) {
	res := ShellResult{V2: true, Exit: -1}
	var stdout, stderr bytes.Buffer
	var hdr [5]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			res.Stdout, res.Stderr = stdout.Bytes(), stderr.Bytes()
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return res, errors.New("stream ended without an exit status")
			}
			return res, err
		}
		n := binary.LittleEndian.Uint32(hdr[1:])
		if int64(n)+int64(stdout.Len()+stderr.Len()) > maxOutput {
			return res, fmt.Errorf("output larger than %d bytes", maxOutput)
		}
		data := make([]byte, n)
		if _, err := io.ReadFull(r, data); err != nil {
			res.Stdout, res.Stderr = stdout.Bytes(), stderr.Bytes()
			return res, fmt.Errorf("truncated shell packet: %w", err)
		}
		switch hdr[0] {
		case idStdout:
			stdout.Write(data)
		case idStderr:
			stderr.Write(data)
		case idExit:
			res.Stdout, res.Stderr = stdout.Bytes(), stderr.Bytes()
			if len(data) != 1 {
				return res, fmt.Errorf("bad exit packet of %d bytes", len(data))
			}
			res.Exit = int(data[0])
			return res, nil
		default:
			// Other ids (window size, stdin echo) carry nothing for us.
		}
	}
}

// Exec runs command with exec: (no pty, no shell protocol): the output is
// binary-safe, stdout and stderr merged, and there is no exit status.
func (c *Client) Exec(ctx context.Context, serial, command string) ([]byte, error) {
	cc, err := c.open(ctx, serial, "exec:"+command)
	if err != nil {
		return nil, wrapCmd("exec", command, err)
	}
	defer cc.Close()
	out, err := readAllLimited(cc)
	if err != nil {
		return nil, wrapCmd("exec", command, deviceLost(serial, cc.wrap(err)))
	}
	return out, nil
}

// wrapCmd names the command in an error, except when the device is gone or
// the server is down: then the command does not matter.
func wrapCmd(kind, command string, err error) error {
	var ge *GoneError
	if errors.As(err, &ge) || errors.Is(err, ErrServerNotRunning) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%s %q: %w", kind, short(command), err)
}

func readAllLimited(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxOutput+1))
	if err != nil {
		return b, err
	}
	if len(b) > maxOutput {
		return b[:maxOutput], fmt.Errorf("output larger than %d bytes", maxOutput)
	}
	return b, nil
}

// deviceLost marks an I/O failure in the middle of a stream: the device went
// away or the server dropped it. Context errors pass through unchanged.
func deviceLost(serial string, err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &GoneError{Serial: serial, Msg: "connection lost: " + err.Error()}
}

// SessionOptions are the terminal and streams of an interactive command
// (Client.Session).
type SessionOptions struct {
	// PTY asks the device for a pseudo-terminal (adb shell -t): the program
	// sees a terminal of Term, its size from Size, and stderr is merged
	// into stdout.
	PTY  bool
	Term string
	// Stdin is sent to the program as it comes; nil sends nothing and
	// closes the program's stdin at once.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Size, when set, returns the terminal's size, sent at the start and
	// each time Resize delivers.
	Size   func() (rows, cols int, ok bool)
	Resize <-chan struct{}
}

// Session runs command on the device with its input and output streamed
// both ways, as `adb shell -t` does, and returns its exit status. It needs
// the shell protocol v2 (the exit status, stdin's end and the window
// size travel in its packets). A connection that ends before the exit
// status is a *GoneError.
func (c *Client) Session(ctx context.Context, serial, command string, o SessionOptions) (int, error) {
	service := "shell,v2,"
	if o.Term != "" && !strings.ContainsAny(o.Term, ",:") {
		service += "TERM=" + o.Term + ","
	}
	if o.PTY {
		service += "pty:" + command
	} else {
		service += "raw:" + command
	}
	cc, err := c.open(ctx, serial, service)
	if err != nil {
		return -1, wrapCmd("shell", command, err)
	}
	defer cc.Close()
	var wmu sync.Mutex
	send := func(id byte, data []byte) error {
		wmu.Lock()
		defer wmu.Unlock()
		hdr := make([]byte, 5, 5+len(data))
		hdr[0] = id
		binary.LittleEndian.PutUint32(hdr[1:], uint32(len(data)))
		_, err := cc.Write(append(hdr, data...))
		return err
	}
	sendSize := func() {
		if o.Size == nil {
			return
		}
		if rows, cols, ok := o.Size(); ok {
			send(idWindowSize, []byte(fmt.Sprintf("%dx%d,0x0\x00", rows, cols)))
		}
	}
	sendSize()
	done := make(chan struct{})
	defer close(done)
	if o.Stdin == nil {
		if err := send(idCloseStdin, nil); err != nil {
			return -1, wrapCmd("shell", command, deviceLost(serial, cc.wrap(err)))
		}
	} else {
		go func() {
			buf := make([]byte, 4096)
			for {
				n, err := o.Stdin.Read(buf)
				select {
				case <-done:
					return
				default:
				}
				if n > 0 && send(idStdin, buf[:n]) != nil {
					return
				}
				if err != nil {
					send(idCloseStdin, nil)
					return
				}
			}
		}()
	}
	if o.Resize != nil {
		go func() {
			for {
				select {
				case <-done:
					return
				case <-o.Resize:
					sendSize()
				}
			}
		}()
	}
	var hdr [5]byte
	for {
		if _, err := io.ReadFull(cc, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				err = errors.New("stream ended without an exit status")
			}
			return -1, wrapCmd("shell", command, deviceLost(serial, cc.wrap(err)))
		}
		n := binary.LittleEndian.Uint32(hdr[1:])
		if n > 1<<20 {
			return -1, fmt.Errorf("shell %q: protocol error: a packet of %d bytes", short(command), n)
		}
		data := make([]byte, n)
		if _, err := io.ReadFull(cc, data); err != nil {
			return -1, wrapCmd("shell", command, deviceLost(serial, cc.wrap(err)))
		}
		switch hdr[0] {
		case idStdout:
			if o.Stdout != nil {
				o.Stdout.Write(data)
			}
		case idStderr:
			if o.Stderr != nil {
				o.Stderr.Write(data)
			}
		case idExit:
			if len(data) != 1 {
				return -1, fmt.Errorf("shell %q: bad exit packet of %d bytes", short(command), len(data))
			}
			return int(data[0]), nil
		}
	}
}
