package adbd

import (
	"bufio"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
)

// conn is one adb server connection: a transport carrying many streams.
type conn struct {
	s  *Server
	nc net.Conn

	wmu     sync.Mutex // serialises writes of whole messages
	version uint32
	maxData uint32

	mu      sync.Mutex
	online  bool
	nextID  uint32
	streams map[uint32]*stream
	done    chan struct{}
}

func newConn(s *Server, nc net.Conn) *conn {
	return &conn{s: s, nc: nc, version: versionMin, maxData: maxPayloadV1, nextID: 1,
		streams: map[uint32]*stream{}, done: make(chan struct{})}
}

func (c *conn) send(m message) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.mu.Lock()
	v := c.version
	c.mu.Unlock()
	_, err := c.nc.Write(encodeMessage(m, v))
	return err
}

func (c *conn) run() {
	defer func() {
		close(c.done)
		c.nc.Close()
		c.mu.Lock()
		for _, st := range c.streams {
			st.hostClosed()
		}
		c.streams = nil
		c.mu.Unlock()
	}()
	r := bufio.NewReader(c.nc)
	for {
		c.mu.Lock()
		limit := c.maxData
		c.mu.Unlock()
		// The very first CNXN may come before maxdata is agreed.
		m, err := readMessage(r, max(limit, maxPayload))
		if err != nil {
			return
		}
		c.mu.Lock()
		online := c.online
		c.mu.Unlock()
		if m.cmd == cmdCNXN {
			c.mu.Lock()
			c.version = min(m.arg0, versionSkipChecksum)
			c.maxData = min(m.arg1, maxPayload)
			c.online = !c.s.opts.RequireAuth
			c.mu.Unlock()
			if c.s.opts.RequireAuth {
				if c.sendAuthToken() != nil {
					return
				}
				continue
			}
			if c.send(message{cmd: cmdCNXN, arg0: versionSkipChecksum, arg1: maxPayload, data: c.s.banner()}) != nil {
				return
			}
			continue
		}
		if m.cmd == cmdAUTH && c.s.opts.RequireAuth {
			// A signature (type 2) never verifies: ask again, as adbd
			// does. A public key (type 3) waits for a person who never
			// comes.
			if m.arg0 == 2 && c.sendAuthToken() != nil {
				return
			}
			continue
		}
		if !online {
			continue // before CNXN everything else is ignored
		}
		switch m.cmd {
		case cmdOPEN:
			c.open(m)
		case cmdOKAY:
			if st := c.stream(m.arg1); st != nil {
				st.acked(m.arg0)
			}
		case cmdWRTE:
			st := c.stream(m.arg1)
			if st == nil {
				continue
			}
			st.in.write(m.data)
			if c.send(message{cmd: cmdOKAY, arg0: st.local, arg1: st.remote}) != nil {
				return
			}
		case cmdCLSE:
			c.mu.Lock()
			st := c.streams[m.arg1]
			delete(c.streams, m.arg1)
			c.mu.Unlock()
			if st != nil {
				st.hostClosed()
			}
		}
	}
}

func (c *conn) sendAuthToken() error {
	token := make([]byte, 20)
	rand.Read(token)
	return c.send(message{cmd: cmdAUTH, arg0: 1, data: token})
}

func (c *conn) stream(id uint32) *stream {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.streams[id]
}

func (c *conn) open(m message) {
	service := strings.TrimRight(string(m.data), "\x00")
	h := c.s.handler(service)
	if h == nil || m.arg0 == 0 {
		c.s.mu.Lock()
		c.s.refused = append(c.s.refused, service)
		c.s.mu.Unlock()
		_ = c.send(message{cmd: cmdCLSE, arg0: 0, arg1: m.arg0})
		return
	}
	c.mu.Lock()
	st := &stream{c: c, local: c.nextID, remote: m.arg0, in: newBufPipe(), ack: make(chan struct{}, 1), closed: make(chan struct{})}
	c.nextID++
	c.streams[st.local] = st
	c.mu.Unlock()
	if c.send(message{cmd: cmdOKAY, arg0: st.local, arg1: st.remote}) != nil {
		return
	}
	go func() {
		h(st)
		st.Close()
	}()
}

// stream is one service stream. It is an io.ReadWriteCloser for handlers:
// Read gets what the host wrote, Write sends WRTE messages with flow control.
type stream struct {
	c             *conn
	local, remote uint32
	in            *bufPipe
	ack           chan struct{}

	once      sync.Once
	closeOnce sync.Once
	closed    chan struct{} // the host closed the stream or the transport died
}

var errStreamClosed = errors.New("stream closed")

func (st *stream) Read(p []byte) (int, error) { return st.in.Read(p) }

func (st *stream) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		st.c.mu.Lock()
		chunk := int(st.c.maxData)
		st.c.mu.Unlock()
		chunk = min(chunk, len(p))
		if err := st.c.send(message{cmd: cmdWRTE, arg0: st.local, arg1: st.remote, data: p[:chunk]}); err != nil {
			return n, err
		}
		// Wait for the host's OKAY before the next WRTE.
		select {
		case <-st.ack:
		case <-st.closed:
			return n, errStreamClosed
		case <-st.c.done:
			return n, errStreamClosed
		}
		n += chunk
		p = p[chunk:]
	}
	return n, nil
}

func (st *stream) acked(uint32) {
	select {
	case st.ack <- struct{}{}:
	default:
	}
}

// Close ends the stream from the device side.
func (st *stream) Close() error {
	st.once.Do(func() {
		select {
		case <-st.closed:
			return // the host closed it first: nothing to say
		default:
		}
		st.c.mu.Lock()
		if st.c.streams != nil {
			delete(st.c.streams, st.local)
		}
		st.c.mu.Unlock()
		_ = st.c.send(message{cmd: cmdCLSE, arg0: st.local, arg1: st.remote})
	})
	return nil
}

func (st *stream) hostClosed() {
	st.closeOnce.Do(func() {
		close(st.closed)
		st.in.close()
	})
}

// bufPipe is an unbounded in-memory pipe, so the transport's reader never
// blocks on a slow service.
type bufPipe struct {
	mu     sync.Mutex
	cond   *sync.Cond
	buf    []byte
	closed bool
}

func newBufPipe() *bufPipe {
	p := &bufPipe{}
	p.cond = sync.NewCond(&p.mu)
	return p
}

func (p *bufPipe) write(b []byte) {
	p.mu.Lock()
	p.buf = append(p.buf, b...)
	p.mu.Unlock()
	p.cond.Broadcast()
}

func (p *bufPipe) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.cond.Broadcast()
}

func (p *bufPipe) Read(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.buf) == 0 && !p.closed {
		p.cond.Wait()
	}
	if len(p.buf) == 0 {
		return 0, io.EOF
	}
	n := copy(b, p.buf)
	p.buf = p.buf[n:]
	return n, nil
}
