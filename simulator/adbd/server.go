// Package adbd is a fake Android device on the device side of the ADB
// transport: it speaks the 24-byte message protocol an adb server uses with
// adbd over TCP (adb connect), answers as an insecure adbd (no AUTH), and
// serves shell v1/v2, exec and sync from a device.Device such as a
// simulator phone. Every shell command it receives is logged.
//
// Its shell is deliberately strict: a small POSIX word splitter that refuses
// anything beyond one simple command with literal words, so tests can prove
// that nothing reaches a device shell unquoted.
package adbd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/droidgo/droidgo/device"
)

// DefaultFeatures are the features the fake announces in its banner. Each is
// implemented: shell_v2 (shell protocol), cmd, stat_v2 (STA2/LST2) and
// fixed_push_mkdir (SEND creates parent directories).
var DefaultFeatures = []string{"shell_v2", "cmd", "stat_v2", "fixed_push_mkdir"}

// Options configure a Server.
type Options struct {
	// Product, Model and Device fill the banner's ro.product.* fields.
	Product, Model, Device string
	// Features announced in the banner; nil means DefaultFeatures. Leave out
	// shell_v2 to make clients fall back to shell v1.
	Features []string
	// Packages answer `pm list packages` when the phone does not list its
	// own (see PackageLister); nil means a small default set.
	Packages []string
	// ADBKeyboard installs ADB Keyboard and makes it the active input
	// method, so `am broadcast -a ADB_INPUT_B64` types text.
	ADBKeyboard bool
	// RequireAuth makes the fake a secure adbd whose owner never accepts the
	// "Allow USB debugging?" prompt: it answers CNXN with AUTH tokens and
	// rejects every signature, so the server lists it as unauthorized.
	RequireAuth bool
	// Rotation is the display rotation in quarter turns (0-3). The phone's
	// Size is the size in that orientation; `wm size` reports the natural
	// (rotation 0) size, as Android does, and `dumpsys input` the rotation.
	Rotation int
	// Props are extra getprop values.
	Props map[string]string
	// Root is the directory of this machine that holds the phone's files
	// (its paths under it: Root/sdcard, Root/data/local/tmp); "" makes a
	// temporary one, removed by Close.
	Root string
	// FreeBytes is the space `df` reports available on every file system
	// of the phone; 0 means 64 GiB.
	FreeBytes int64
	// OnCommand, when set, is called after each logged command (tests use
	// it to pull the plug at a chosen moment; it must not call Close
	// synchronously).
	OnCommand func(Command)
}

// PackageLister is implemented by phones that know their installed
// packages.
type PackageLister interface {
	Packages() []string
}

// Command is one logged shell command line.
type Command struct {
	// Service is how it arrived: "shell" (v1), "shell,v2", "exec", or
	// "shell-interactive".
	Service string `json:"service"`
	// Line is the command line as received.
	Line string `json:"line"`
	// Argv are the words the strict splitter found; nil when rejected.
	Argv []string `json:"argv,omitempty"`
	// Rejected says why the splitter refused the line ("" if accepted).
	Rejected string `json:"rejected,omitempty"`
	// Exit is the command's exit status.
	Exit int `json:"exit"`
	// Time is when it was received.
	Time time.Time `json:"time"`
}

// Server is a fake adbd.
type Server struct {
	phone device.Device
	opts  Options
	fs    *diskFS
	fsErr error

	mu      sync.Mutex
	ln      net.Listener
	conns   map[net.Conn]bool
	log     []Command
	refused []string
	// cutAfter, when not negative, is how many more bytes of sync DATA
	// the fake takes before it drops the connection (CutSyncAfter).
	cutAfter  int64
	syncBytes int64
	// corrupt, when set, flips a byte of the next file pushed
	// (CorruptNextPush).
	corrupt bool
	// progs, when set, runs the programs pushed to the phone
	// (RunPrograms).
	progs  *programs
	ime    string
	closed bool
	wg     sync.WaitGroup
	ctx    context.Context
	cancel context.CancelFunc
}

// New returns a fake adbd serving phone. Call Listen, then Serve (or Start).
func New(phone device.Device, opts Options) *Server {
	if opts.Features == nil {
		opts.Features = DefaultFeatures
	}
	if opts.Product == "" {
		opts.Product = "droidgo_sim"
	}
	if opts.Model == "" {
		opts.Model = "Droidgo_Simulator"
	}
	if opts.Device == "" {
		opts.Device = "droidgosim"
	}
	ctx, cancel := context.WithCancel(context.Background())
	fsys, fsErr := newDiskFS(opts.Root)
	s := &Server{phone: phone, opts: opts, fs: fsys, fsErr: fsErr, conns: map[net.Conn]bool{}, ctx: ctx, cancel: cancel, cutAfter: -1}
	s.ime = "com.google.android.inputmethod.latin/com.android.inputmethod.latin.LatinIME"
	if opts.ADBKeyboard {
		s.ime = adbKeyboardIME
	}
	return s
}

// Listen opens the TCP listener. addr must be a loopback address such as
// "127.0.0.1:0" (port 0 picks a free port).
func (s *Server) Listen(addr string) error {
	if s.fsErr != nil {
		return fmt.Errorf("fake device file system: %w", s.fsErr)
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("listen %q: the fake device only listens on a loopback address such as 127.0.0.1", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	s.mu.Lock()
	s.ln = ln
	s.mu.Unlock()
	return nil
}

// Addr returns the listening address (host:port).
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Port returns the listening port.
func (s *Server) Port() int {
	_, p, _ := net.SplitHostPort(s.Addr())
	n, _ := strconv.Atoi(p)
	return n
}

// Start serves in the background.
func (s *Server) Start() {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = s.Serve()
	}()
}

// Serve accepts adb server connections until Close.
func (s *Server) Serve() error {
	s.mu.Lock()
	ln := s.ln
	s.mu.Unlock()
	if ln == nil {
		return errors.New("serve: call Listen first")
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return nil
			}
			return fmt.Errorf("accept: %w", err)
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return nil
		}
		s.conns[c] = true
		s.wg.Add(1) // under mu, so Close cannot be waiting yet
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			newConn(s, c).run()
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
	}
}

// Close stops listening and drops every connection, as a phone that is
// unplugged would.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	ln := s.ln
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.cancel()
	var err error
	if ln != nil {
		err = ln.Close()
	}
	s.wg.Wait()
	if s.fs != nil {
		s.fs.close()
	}
	return err
}

// DropConnections drops every connection to the adb server, as a pulled
// cable does, and goes on listening (adb connect brings the phone back).
func (s *Server) DropConnections() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.Close()
	}
}

// Commands returns a copy of the command log.
func (s *Server) Commands() []Command {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Command(nil), s.log...)
}

// RefusedServices returns the service names the fake refused to open.
func (s *Server) RefusedServices() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.refused...)
}

// WriteFile stores a file in the fake's file system.
func (s *Server) WriteFile(path string, data []byte) { s.fs.write(path, data, 0o660) }

// ReadFile reads a file from the fake's file system.
func (s *Server) ReadFile(path string) ([]byte, bool) {
	data, err := s.fs.read(path)
	return data, err == nil
}

// HostPath is the file of this machine that holds the phone's path.
func (s *Server) HostPath(path string) string { return s.fs.host(path) }

// CutSyncAfter makes the fake drop its connection to the adb server, as a
// pulled cable would, once it has received n more bytes of file data
// through sync (push). The cut happens once.
func (s *Server) CutSyncAfter(n int64) {
	s.mu.Lock()
	s.cutAfter = n
	s.mu.Unlock()
}

// CorruptNextPush makes the next file pushed arrive with one byte
// changed, as a flaky cable or storage might leave it.
func (s *Server) CorruptNextPush() {
	s.mu.Lock()
	s.corrupt = true
	s.mu.Unlock()
}

// takeCorrupt reports whether this push is to be corrupted.
func (s *Server) takeCorrupt() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.corrupt
	s.corrupt = false
	return c
}

// SyncBytes is how many bytes of file data the fake has received through
// sync (push), cut transfers included.
func (s *Server) SyncBytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.syncBytes
}

// takeSync counts n bytes of pushed data and says how many of them the
// fake takes before it must cut the connection (n when there is no cut).
func (s *Server) takeSync(n int64) (take int64, cut bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	take = n
	if s.cutAfter >= 0 && n >= s.cutAfter {
		take, cut = s.cutAfter, true
		s.cutAfter = -1
	} else if s.cutAfter >= 0 {
		s.cutAfter -= n
	}
	s.syncBytes += take
	return take, cut
}

func (s *Server) record(c Command) {
	s.mu.Lock()
	s.log = append(s.log, c)
	s.mu.Unlock()
	if s.opts.OnCommand != nil {
		s.opts.OnCommand(c)
	}
}

func (s *Server) banner() []byte {
	return []byte(fmt.Sprintf("device::ro.product.name=%s;ro.product.model=%s;ro.product.device=%s;features=%s",
		s.opts.Product, s.opts.Model, s.opts.Device, strings.Join(s.opts.Features, ",")))
}

func (s *Server) hasFeature(f string) bool {
	for _, x := range s.opts.Features {
		if x == f {
			return true
		}
	}
	return false
}
