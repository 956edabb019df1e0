package slacktest

import (
	"context"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// Pipes is an in-memory network for tests that run in a testing/synctest
// bubble, where the fake clock moves only while every goroutine waits on
// the bubble's own channels, conditions or timers: a goroutine reading a
// loopback socket would hold it still. Pipes is a [net.Listener], and
// [Pipes.DialContext] opens a connection to it (whatever the address).
//
// Unlike [net.Pipe], a connection buffers what is written, as a socket
// does, so a writer never waits for the reader.
type Pipes struct {
	conns chan net.Conn
	once  sync.Once
	done  chan struct{}
}

// NewPipes returns a listener for [Pipes.DialContext].
func NewPipes() *Pipes {
	return &Pipes{conns: make(chan net.Conn), done: make(chan struct{})}
}

// Accept waits for a connection from DialContext.
func (p *Pipes) Accept() (net.Conn, error) {
	select {
	case c := <-p.conns:
		return c, nil
	case <-p.done:
		return nil, net.ErrClosed
	}
}

// Close stops accepting; open connections stay open.
func (p *Pipes) Close() error {
	p.once.Do(func() { close(p.done) })
	return nil
}

// Addr is the listener's address, "slacktest.pipe:80".
func (p *Pipes) Addr() net.Addr { return pipeAddr{} }

// DialContext connects to the listener, ignoring network and address: it
// fits [http.Transport.DialContext] and websocket.Dialer.NetDialContext.
func (p *Pipes) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	l := &link{}
	l.cond.L = &l.mu
	client, server := &pipeConn{l: l, end: 0}, &pipeConn{l: l, end: 1}
	select {
	case p.conns <- server:
		return client, nil
	case <-p.done:
		return nil, &net.OpError{Op: "dial", Net: "pipe", Addr: pipeAddr{}, Err: net.ErrClosed}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "slacktest.pipe:80" }

// link is a connection's two ends, 0 and 1, sharing one lock.
type link struct {
	mu     sync.Mutex
	cond   sync.Cond // signalled on data, close and deadlines
	unread [2][]byte // unread[i]: written by the other end, for end i
	closed [2]bool
	// Read and write deadlines of each end, and the timers that wake
	// readers when a read deadline passes.
	readBy, writeBy [2]time.Time
	timer           [2]*time.Timer
}

// pipeConn is one end of a link.
type pipeConn struct {
	l   *link
	end int
}

func (c *pipeConn) Read(b []byte) (int, error) {
	l, i := c.l, c.end
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		switch {
		case l.closed[i]:
			return 0, net.ErrClosed
		case len(l.unread[i]) > 0:
			n := copy(b, l.unread[i])
			l.unread[i] = l.unread[i][n:]
			return n, nil
		case l.closed[1-i]:
			return 0, io.EOF
		case expired(l.readBy[i]):
			return 0, os.ErrDeadlineExceeded
		}
		l.cond.Wait()
	}
}

func (c *pipeConn) Write(b []byte) (int, error) {
	l, i := c.l, c.end
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed[i]:
		return 0, net.ErrClosed
	case l.closed[1-i]:
		return 0, io.ErrClosedPipe
	case expired(l.writeBy[i]):
		return 0, os.ErrDeadlineExceeded
	}
	l.unread[1-i] = append(l.unread[1-i], b...)
	l.cond.Broadcast()
	return len(b), nil
}

func (c *pipeConn) Close() error {
	l, i := c.l, c.end
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed[i], l.unread[i] = true, nil
	if l.timer[i] != nil {
		l.timer[i].Stop()
	}
	l.cond.Broadcast()
	return nil
}

func (c *pipeConn) SetReadDeadline(t time.Time) error {
	l, i := c.l, c.end
	l.mu.Lock()
	defer l.mu.Unlock()
	l.readBy[i] = t
	if l.timer[i] != nil {
		l.timer[i].Stop()
		l.timer[i] = nil
	}
	if !t.IsZero() {
		l.timer[i] = time.AfterFunc(time.Until(t), func() {
			l.mu.Lock()
			l.cond.Broadcast()
			l.mu.Unlock()
		})
	}
	l.cond.Broadcast()
	return nil
}

func (c *pipeConn) SetWriteDeadline(t time.Time) error {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	c.l.writeBy[c.end] = t // writes never wait: only checked at the start
	return nil
}

func (c *pipeConn) SetDeadline(t time.Time) error {
	c.SetWriteDeadline(t)
	return c.SetReadDeadline(t)
}

func (c *pipeConn) LocalAddr() net.Addr  { return pipeAddr{} }
func (c *pipeConn) RemoteAddr() net.Addr { return pipeAddr{} }

func expired(deadline time.Time) bool {
	return !deadline.IsZero() && !time.Now().Before(deadline)
}
