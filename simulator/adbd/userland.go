package adbd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/droidgo/droidgo/device/shell"
)

// A fake Android userland lets a program that runs "on" the fake phone
// (droidgo with --device local, under qemu or not) drive it as it would
// drive a real phone from its shell user: a directory of programs named
// like Android's (sh, uiautomator, input, am, cmd, pm, monkey, wm,
// dumpsys, getprop, settings, ime, and the toybox tools droidgo uses), put
// first on the program's PATH. Each is a two-line shim that runs one
// command of UserlandMain, which asks the Server over a unix socket to
// carry the command out on the phone, exactly as the fake adbd's shell
// would. The fake sh is as strict as the fake adbd's: one simple command
// of literal words (see Split), which it logs and runs from PATH.

// UserlandSocketEnv names the socket of the phone a fake userland serves.
const UserlandSocketEnv = "DROIDGO_FAKE_PHONE"

// UserlandService is the Command.Service of a line run by the fake sh.
const UserlandService = "sh -c"

// UserlandCommands are the programs of the fake userland.
var UserlandCommands = []string{
	"sh", "uiautomator", "input", "am", "cmd", "pm", "monkey", "wm", "dumpsys", "getprop",
	"settings", "ime", "cat", "ls", "rm", "echo", "id", "sleep", "true", "false",
	"sha256sum", "df", "dd", "mv", "mkdir", "chmod", "stat",
}

// Userland is a fake userland served by a Server.
type Userland struct {
	// Dir holds bin/ (the programs) and the socket.
	Dir    string
	socket string
	// qemu, when set, runs the arm64 programs the sh starts
	// (Server.RunPrograms).
	qemu string
	ln   net.Listener
	wg   sync.WaitGroup
}

// StartUserland writes a fake userland into dir and serves it. exe is the
// command line that runs UserlandMain with the command's name and
// arguments after it (droidgo's is `droidgo sim userland`).
func (s *Server) StartUserland(dir string, exe ...string) (*Userland, error) {
	if len(exe) == 0 {
		return nil, errors.New("fake userland: no program to run its commands")
	}
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return nil, fmt.Errorf("fake userland: %w", err)
	}
	prefix, err := shell.ShellLine(exe...)
	if err != nil {
		return nil, fmt.Errorf("fake userland: %w", err)
	}
	for _, name := range UserlandCommands {
		shim := "#!/bin/sh\nexec " + prefix + " " + name + " \"$@\"\n"
		if err := os.WriteFile(filepath.Join(bin, name), []byte(shim), 0o755); err != nil {
			return nil, fmt.Errorf("fake userland: %w", err)
		}
	}
	u := &Userland{Dir: dir, socket: filepath.Join(dir, "phone.sock")}
	os.Remove(u.socket)
	ln, err := net.Listen("unix", u.socket)
	if err != nil {
		return nil, fmt.Errorf("fake userland: %w", err)
	}
	u.ln = ln
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u.wg.Add(1)
			go func() {
				defer u.wg.Done()
				defer c.Close()
				s.serveUserland(c)
			}()
		}
	}()
	return u, nil
}

// Bin is the directory of the userland's programs, for the front of PATH.
func (u *Userland) Bin() string { return filepath.Join(u.Dir, "bin") }

// Env is the environment a program on the fake phone needs: PATH with
// only the userland's programs, and the socket.
func (u *Userland) Env() []string {
	env := []string{"PATH=" + u.Bin(), UserlandSocketEnv + "=" + u.socket}
	if u.qemu != "" {
		env = append(env, QEMUEnv+"="+u.qemu)
	}
	return env
}

// Close stops serving.
func (u *Userland) Close() error {
	err := u.ln.Close()
	u.wg.Wait()
	return err
}

// userlandRequest is one call of a userland program.
type userlandRequest struct {
	// Op is "run" (carry out Argv, answer its output) or "log" (record a
	// line the fake sh ran).
	Op   string   `json:"op"`
	Argv []string `json:"argv,omitempty"`
	// Line, Rejected and Exit describe a logged line.
	Line     string `json:"line,omitempty"`
	Rejected string `json:"rejected,omitempty"`
	Exit     int    `json:"exit,omitempty"`
}

type userlandReply struct {
	Stdout []byte `json:"stdout,omitempty"`
	Stderr []byte `json:"stderr,omitempty"`
	Exit   int    `json:"exit"`
}

// maxUserlandRequest bounds a request: a command line of a few words.
const maxUserlandRequest = 1 << 20

func (s *Server) serveUserland(c net.Conn) {
	c.SetDeadline(time.Now().Add(time.Minute))
	var req userlandRequest
	if err := json.NewDecoder(io.LimitReader(c, maxUserlandRequest)).Decode(&req); err != nil {
		return
	}
	var rep userlandReply
	switch req.Op {
	case "run":
		if len(req.Argv) == 0 {
			rep.Exit = 0
			break
		}
		var o output
		rep.Exit = s.run(req.Argv, &o)
		rep.Stdout, rep.Stderr = o.stdout.Bytes(), o.stderr.Bytes()
	case "log":
		s.record(Command{Service: UserlandService, Line: req.Line, Argv: req.Argv, Rejected: req.Rejected, Exit: req.Exit, Time: time.Now()})
	default:
		rep.Exit = 2
		rep.Stderr = []byte("fake userland: unknown request\n")
	}
	json.NewEncoder(c).Encode(rep)
}

// UserlandMain runs the fake userland's command name with args, on the
// phone whose socket UserlandSocketEnv names, and returns its exit status.
func UserlandMain(name string, args []string, stdout, stderr io.Writer) int {
	sock := os.Getenv(UserlandSocketEnv)
	if sock == "" {
		fmt.Fprintf(stderr, "%s: %s is not set: this program belongs to a fake phone's userland\n", name, UserlandSocketEnv)
		return 126
	}
	call := func(req userlandRequest) (userlandReply, error) {
		c, err := net.Dial("unix", sock)
		if err != nil {
			return userlandReply{}, err
		}
		defer c.Close()
		if err := json.NewEncoder(c).Encode(req); err != nil {
			return userlandReply{}, err
		}
		var rep userlandReply
		err = json.NewDecoder(c).Decode(&rep)
		return rep, err
	}
	if name != "sh" {
		rep, err := call(userlandRequest{Op: "run", Argv: append([]string{name}, args...)})
		if err != nil {
			fmt.Fprintf(stderr, "%s: the fake phone does not answer: %v\n", name, err)
			return 126
		}
		stdout.Write(rep.Stdout)
		stderr.Write(rep.Stderr)
		return rep.Exit
	}
	if len(args) != 2 || args[0] != "-c" {
		fmt.Fprintf(stderr, "/system/bin/sh: the fake phone's sh only runs `sh -c LINE`, not %q\n", args)
		return 2
	}
	line := args[1]
	logLine := func(req userlandRequest) int {
		req.Op, req.Line = "log", line
		if _, err := call(req); err != nil {
			fmt.Fprintf(stderr, "/system/bin/sh: the fake phone does not answer: %v\n", err)
			return 126
		}
		return req.Exit
	}
	argv, err := Split(line)
	if err != nil {
		fmt.Fprintf(stderr, "/system/bin/sh: syntax refused by the fake phone: %v\n", err)
		return logLine(userlandRequest{Rejected: err.Error(), Exit: 2})
	}
	if len(argv) == 0 {
		return logLine(userlandRequest{})
	}
	path := argv[0]
	if !strings.Contains(path, "/") {
		if path, err = exec.LookPath(argv[0]); err != nil {
			fmt.Fprintf(stderr, "/system/bin/sh: %s: inaccessible or not found\n", argv[0])
			return logLine(userlandRequest{Argv: argv, Exit: 127})
		}
	}
	cmd := &exec.Cmd{Path: path, Args: argv, Stdin: os.Stdin, Stdout: stdout, Stderr: stderr}
	if qemu := os.Getenv(QEMUEnv); qemu != "" && needsEmulator(path) {
		cmd.Path, cmd.Args = qemu, append([]string{qemu, "-cpu", "max", path}, argv[1:]...)
	}
	code := 0
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			fmt.Fprintf(stderr, "/system/bin/sh: %s: %v\n", argv[0], err)
			return logLine(userlandRequest{Argv: argv, Exit: 126})
		}
		code = ee.ExitCode()
		if code < 0 {
			code = 128 + 9
		}
	}
	return logLine(userlandRequest{Argv: argv, Exit: code})
}
