// Package adb speaks the adb server's smart-socket protocol directly (no adb
// binary needed once a server runs) and implements device.Device on top of it.
//
// The wire protocol is the one adb 29 speaks: hex4-framed requests to the
// server, host:transport switching, shell v1/v2, exec and sync.
package adb

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// DefaultPort is the adb server's default TCP port.
const DefaultPort = 5037

// ErrServerNotRunning reports that nothing listens at the adb server address
// and the server could not (or was not allowed to) be started.
var ErrServerNotRunning = errors.New("adb server is not running")

// ServerError is a FAIL reply from the adb server, with its reason.
type ServerError struct {
	Request string
	Msg     string
}

func (e *ServerError) Error() string {
	return fmt.Sprintf("adb server refused %q: %s", e.Request, e.Msg)
}

// Client talks to one adb server. The zero value is not usable; use NewClient.
type Client struct {
	// Addr is the server's host:port.
	Addr string
	// AutoStart starts the server with the adb binary when nothing listens at
	// Addr and Addr is a loopback address, as adb itself does.
	AutoStart bool
	// ADBPath is the adb binary used to start the server; "" looks up "adb"
	// in PATH.
	ADBPath string
	// DialTimeout bounds connecting to the server; 0 means 5 seconds.
	DialTimeout time.Duration
}

// NewClient returns a client for the server named by the environment, the way
// adb chooses it: ADB_SERVER_SOCKET=tcp:HOST:PORT, else
// ANDROID_ADB_SERVER_ADDRESS (host) and ANDROID_ADB_SERVER_PORT (port), else
// 127.0.0.1:5037. AutoStart is on.
func NewClient() (*Client, error) {
	addr, err := ServerAddr(os.Getenv)
	if err != nil {
		return nil, err
	}
	return &Client{Addr: addr, AutoStart: true}, nil
}

// ServerAddr resolves the adb server address from environment lookups.
func ServerAddr(getenv func(string) string) (string, error) {
	if s := getenv("ADB_SERVER_SOCKET"); s != "" {
		rest, ok := strings.CutPrefix(s, "tcp:")
		if !ok {
			return "", fmt.Errorf("ADB_SERVER_SOCKET=%q: only tcp:HOST:PORT is supported", s)
		}
		host, port, err := net.SplitHostPort(rest)
		if err != nil {
			// "tcp:5037" means localhost, as adb reads it.
			if _, perr := strconv.Atoi(rest); perr == nil {
				host, port = "127.0.0.1", rest
			} else {
				return "", fmt.Errorf("ADB_SERVER_SOCKET=%q: want tcp:HOST:PORT", s)
			}
		}
		if err := checkPort(port); err != nil {
			return "", fmt.Errorf("ADB_SERVER_SOCKET=%q: %w", s, err)
		}
		if host == "" || host == "localhost" {
			host = "127.0.0.1"
		}
		return net.JoinHostPort(host, port), nil
	}
	host := getenv("ANDROID_ADB_SERVER_ADDRESS")
	if host == "" || host == "localhost" {
		host = "127.0.0.1"
	}
	port := strconv.Itoa(DefaultPort)
	if p := getenv("ANDROID_ADB_SERVER_PORT"); p != "" {
		if err := checkPort(p); err != nil {
			return "", fmt.Errorf("ANDROID_ADB_SERVER_PORT=%q: %w", p, err)
		}
		port = p
	}
	return net.JoinHostPort(host, port), nil
}

func checkPort(p string) error {
	n, err := strconv.Atoi(p)
	if err != nil || n <= 0 || n > 65535 {
		return errors.New("not a TCP port number")
	}
	return nil
}

// conn is a server connection that is closed when its context is done, so
// every blocking read or write returns promptly on cancellation.
type conn struct {
	net.Conn
	ctx  context.Context
	stop func() bool
}

func (c *conn) Close() error {
	c.stop()
	return c.Conn.Close()
}

// wrap turns an I/O error into the context's error when the context ended it.
func (c *conn) wrap(err error) error {
	if err == nil {
		return nil
	}
	if cerr := c.ctx.Err(); cerr != nil {
		return cerr
	}
	return err
}

func (c *Client) dialOnce(ctx context.Context) (*conn, error) {
	t := c.DialTimeout
	if t == 0 {
		t = 5 * time.Second
	}
	d := net.Dialer{Timeout: t}
	nc, err := d.DialContext(ctx, "tcp", c.Addr)
	if err != nil {
		return nil, err
	}
	cc := &conn{Conn: nc, ctx: ctx}
	cc.stop = context.AfterFunc(ctx, func() { nc.Close() })
	return cc, nil
}

// dial connects to the server, starting it first when allowed.
func (c *Client) dial(ctx context.Context) (*conn, error) {
	cc, err := c.dialOnce(ctx)
	if err == nil {
		return cc, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	// A refused connection, or any failure to reach a loopback address
	// (Windows reports refusals with its own error numbers), means no
	// server listens.
	if !errors.Is(err, syscall.ECONNREFUSED) && !isLoopback(c.Addr) {
		return nil, fmt.Errorf("connect to adb server at %s: %w", c.Addr, err)
	}
	if !c.AutoStart || !isLoopback(c.Addr) {
		return nil, fmt.Errorf("%w at %s: start it with %q", ErrServerNotRunning, c.Addr, c.startCommand())
	}
	if serr := c.StartServer(ctx); serr != nil {
		return nil, serr
	}
	cc, err = c.dialOnce(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w at %s even after starting it: %v", ErrServerNotRunning, c.Addr, err)
	}
	return cc, nil
}

func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}

func (c *Client) port() string {
	_, p, _ := net.SplitHostPort(c.Addr)
	return p
}

func (c *Client) startCommand() string {
	if p := c.port(); p != "" && p != strconv.Itoa(DefaultPort) {
		return "adb -P " + p + " start-server"
	}
	return "adb start-server"
}

// send writes one hex4-framed request.
func send(c *conn, req string) error {
	if len(req) > 0xffff {
		return fmt.Errorf("adb request too long (%d bytes)", len(req))
	}
	_, err := fmt.Fprintf(c, "%04x%s", len(req), req)
	if err != nil {
		return fmt.Errorf("send %q: %w", short(req), c.wrap(err))
	}
	return nil
}

// readStatus reads OKAY or FAIL+reason.
func readStatus(c *conn, req string) error {
	var st [4]byte
	if _, err := io.ReadFull(c, st[:]); err != nil {
		return fmt.Errorf("read reply to %q: %w", short(req), c.wrap(err))
	}
	switch string(st[:]) {
	case "OKAY":
		return nil
	case "FAIL":
		msg, err := readHex4(c)
		if err != nil {
			return fmt.Errorf("read failure reason for %q: %w", short(req), c.wrap(err))
		}
		return &ServerError{Request: short(req), Msg: string(msg)}
	default:
		return fmt.Errorf("read reply to %q: protocol error: got %q, want OKAY or FAIL", short(req), st[:])
	}
}

// readHex4 reads a hex4 length and that many bytes.
func readHex4(r io.Reader) ([]byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	var n [2]byte
	if _, err := hex.Decode(n[:], h[:]); err != nil {
		return nil, fmt.Errorf("protocol error: bad length %q", h[:])
	}
	buf := make([]byte, int(n[0])<<8|int(n[1]))
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

func short(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// Query sends a host request that answers with OKAY + hex4 payload and
// returns the payload (host:version, host:devices-l, host:connect:...).
func (c *Client) Query(ctx context.Context, req string) (string, error) {
	cc, err := c.dial(ctx)
	if err != nil {
		return "", err
	}
	defer cc.Close()
	if err := send(cc, req); err != nil {
		return "", err
	}
	if err := readStatus(cc, req); err != nil {
		return "", err
	}
	b, err := readHex4(cc)
	if err != nil {
		return "", fmt.Errorf("read reply to %q: %w", short(req), cc.wrap(err))
	}
	return string(b), nil
}

// Version returns the server's protocol version (41 for adb 1.0.41).
func (c *Client) Version(ctx context.Context) (int, error) {
	s, err := c.Query(ctx, "host:version")
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(s, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("host:version: bad reply %q", s)
	}
	return int(v), nil
}

// Connect asks the server to connect to a device over TCP (adb connect). It
// returns the server's message; the handshake continues afterwards, so use
// WaitState to wait for the device.
func (c *Client) Connect(ctx context.Context, hostport string) (string, error) {
	if err := checkHostPort(hostport); err != nil {
		return "", err
	}
	msg, err := c.Query(ctx, "host:connect:"+hostport)
	if err != nil {
		return "", fmt.Errorf("connect %s: %w", hostport, err)
	}
	// adb answers OKAY even when it could not connect; the text tells.
	if !strings.HasPrefix(msg, "connected to") && !strings.HasPrefix(msg, "already connected") {
		msg = strings.TrimSpace(msg)
		if strings.Contains(msg, "failed to authenticate") {
			return msg, fmt.Errorf("connect %s: %s: accept the \"Allow debugging?\" prompt on the phone, then retry", hostport, msg)
		}
		return msg, fmt.Errorf("connect %s: %s", hostport, msg)
	}
	return msg, nil
}

// Disconnect asks the server to drop a TCP device.
func (c *Client) Disconnect(ctx context.Context, hostport string) error {
	_, err := c.Query(ctx, "host:disconnect:"+hostport)
	return err
}

func checkHostPort(hp string) error {
	host, port, err := net.SplitHostPort(hp)
	if err != nil || host == "" || checkPort(port) != nil {
		return fmt.Errorf("%q is not HOST:PORT", hp)
	}
	if strings.ContainsAny(hp, "\x00\n\r\t ") {
		return fmt.Errorf("%q is not HOST:PORT", hp)
	}
	return nil
}

// State returns a device's state as the server sees it ("device",
// "offline", "unauthorized", ...).
func (c *Client) State(ctx context.Context, serial string) (string, error) {
	return c.Query(ctx, "host-serial:"+serial+":get-state")
}

// WaitState polls until the device reaches state "device", or ctx ends, or
// the device settles in a state that needs a person (unauthorized).
func (c *Client) WaitState(ctx context.Context, serial string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := ""
	for {
		st, err := c.State(ctx, serial)
		if err == nil {
			last = st
			switch st {
			case "device":
				return nil
			case "unauthorized":
				return usable(DeviceInfo{Serial: serial, State: st})
			}
		} else if ctx.Err() == nil {
			var se *ServerError
			if !errors.As(err, &se) {
				return err
			}
			last = se.Msg
		}
		select {
		case <-ctx.Done():
			if last == "" {
				last = "not listed"
			}
			return fmt.Errorf("device %s did not come online (%s)", serial, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Features returns the features the device announced (shell_v2, cmd,
// stat_v2, ...).
func (c *Client) Features(ctx context.Context, serial string) ([]string, error) {
	s, err := c.Query(ctx, "host-serial:"+serial+":features")
	if err != nil {
		return nil, fmt.Errorf("features of %s: %w", serial, err)
	}
	var out []string
	for _, f := range strings.Split(strings.TrimSpace(s), ",") {
		if f != "" {
			out = append(out, f)
		}
	}
	return out, nil
}

// Kill asks the server to exit (adb kill-server).
func (c *Client) Kill(ctx context.Context) error {
	cc, err := c.dialOnce(ctx)
	if err != nil {
		return nil
	}
	defer cc.Close()
	if err := send(cc, "host:kill"); err != nil {
		return err
	}
	_ = readStatus(cc, "host:kill")
	return nil
}

// open switches a new server connection to the device and opens service on
// it. The returned conn is a raw pipe to the service.
func (c *Client) open(ctx context.Context, serial, service string) (*conn, error) {
	cc, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	treq := "host:transport:" + serial
	if serial == "" {
		treq = "host:transport-any"
	}
	if err := send(cc, treq); err != nil {
		cc.Close()
		return nil, err
	}
	if err := readStatus(cc, treq); err != nil {
		cc.Close()
		return nil, deviceGone(serial, err)
	}
	if err := send(cc, service); err != nil {
		cc.Close()
		return nil, err
	}
	if err := readStatus(cc, service); err != nil {
		cc.Close()
		var se *ServerError
		if !errors.As(err, &se) {
			// The server hung up instead of answering: the transport
			// died under it.
			return nil, deviceLost(serial, err)
		}
		if se.Msg == "closed" && serial != "" {
			// The device refused the service, or its transport is going
			// away; the state tells which.
			if st, serr := c.State(ctx, serial); serr != nil || st != "device" {
				return nil, &GoneError{Serial: serial, Msg: "it closed the connection"}
			}
		}
		return nil, deviceGone(serial, err)
	}
	return cc, nil
}

// deviceGone turns the server's "not found"/"offline" answers into errors
// that wrap device.ErrNoDevice-like context for callers.
func deviceGone(serial string, err error) error {
	var se *ServerError
	if errors.As(err, &se) {
		m := se.Msg
		switch {
		case strings.Contains(m, "not found"), strings.Contains(m, "no devices"), strings.Contains(m, "offline"):
			return &GoneError{Serial: serial, Msg: m}
		}
	}
	return err
}
