// Package redistest starts a real redis-server for tests: on a free
// loopback port, with its files in the test's temporary directory, stopped
// when the test ends. Tests of code that talks to Redis run against it
// rather than a mock.
//
// When redis-server is not installed the test is skipped, unless CI or
// SANDPIPER_REQUIRE_REDIS is set (CI installs Redis, so there a missing
// server is a failure, not a skip).
package redistest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Limits of the helper.
const (
	// startTimeout bounds the wait for a started server to answer PING;
	// generous, for a loaded machine.
	startTimeout = 30 * time.Second
	// stopTimeout bounds the wait for a server to exit after SIGTERM
	// before it is killed.
	stopTimeout = 10 * time.Second
	// startAttempts is how many ports are tried: a free port found by
	// listening may be taken by another process before the server binds it.
	startAttempts = 5
)

// Options change how the server runs. The zero value keeps nothing on
// disk: a restarted server comes back empty.
type Options struct {
	// Persist turns on the append-only file with an fsync per write, so a
	// server stopped (even killed) and restarted keeps its data.
	Persist bool
}

// Server is a running redis-server. Its methods are safe to call from
// several goroutines.
type Server struct {
	t    testing.TB
	bin  string
	dir  string
	opts Options

	mu   sync.Mutex
	port int
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// Start starts a redis-server for the test and stops it at the test's end.
func Start(t testing.TB) *Server { return StartWith(t, Options{}) }

// StartWith is [Start] with options.
func StartWith(t testing.TB, opts Options) *Server {
	t.Helper()
	bin, err := lookPath()
	if err != nil {
		if os.Getenv("CI") != "" || os.Getenv("SANDPIPER_REQUIRE_REDIS") != "" {
			t.Fatalf("redistest: %v (CI or SANDPIPER_REQUIRE_REDIS is set, so this is a failure; install the redis-server package)", err)
		}
		t.Skipf("redistest: %v; install the redis-server package (apt-get install redis-server) to run this test", err)
	}
	s := &Server{t: t, bin: bin, dir: t.TempDir(), opts: opts}
	t.Cleanup(s.Stop)
	var lastErr error
	for range startAttempts {
		port, err := freePort()
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
		if lastErr = s.start(port); lastErr == nil {
			return s
		}
	}
	t.Fatalf("redistest: %v", lastErr)
	return nil
}

// lookPath finds redis-server on PATH or where Debian installs it.
func lookPath() (string, error) {
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/bin/redis-server", "/usr/sbin/redis-server", "/usr/local/bin/redis-server"} {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	return "", errors.New("redis-server not found on PATH")
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// start runs the server on port and waits until it answers PING.
func (s *Server) start(port int) error {
	args := []string{
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--dir", s.dir,
		"--save", "",
		"--daemonize", "no",
		"--logfile", "redis.log",
		"--databases", "16",
	}
	if s.opts.Persist {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		args = append(args, "--appendonly", "no")
	}
	cmd := exec.Command(s.bin, args...)
	cmd.Dir = s.dir
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", s.bin, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()

	deadline := time.Now().Add(startTimeout)
	for {
		if err := ping(port); err == nil {
			break
		}
		select {
		case <-done:
			return fmt.Errorf("redis-server exited on port %d: %s", port, s.logTail())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-done
			return fmt.Errorf("redis-server did not answer PING on port %d within %s: %s", port, startTimeout, s.logTail())
		}
	}
	s.mu.Lock()
	s.port, s.cmd, s.done = port, cmd, done
	s.mu.Unlock()
	return nil
}

// ping sends PING over RESP and expects +PONG.
func ping(port int) error {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}

func (s *Server) logTail() string {
	b, err := os.ReadFile(filepath.Join(s.dir, "redis.log"))
	if err != nil {
		return "(no log)"
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	return strings.Join(lines, "\n")
}

// Addr returns the server's host:port.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

// URL returns a redis:// URL for the server's database db.
func (s *Server) URL(db int) string {
	return fmt.Sprintf("redis://%s/%d", s.Addr(), db)
}

// Stop stops the server (SIGTERM, then SIGKILL after a while) and waits for
// it to exit. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(stopTimeout):
		cmd.Process.Kill()
		<-done
	}
}

// Kill kills the server at once (SIGKILL), as a crash or a lost host
// would, and waits for it to exit.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Kill()
	<-done
}

// Restart starts the server again on the same port, after [Server.Stop]
// or [Server.Kill] (it stops a running server first). Without
// [Options.Persist] it comes back empty.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.mu.Lock()
	port := s.port
	s.mu.Unlock()
	// The port was ours a moment ago; if another process took it, the test
	// cannot go on (clients hold the address).
	var err error
	for range startAttempts {
		if err = s.start(port); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.t.Fatalf("redistest: restarting: %v", err)
}

// Do sends one command over a fresh connection and returns the reply's
// first line (for simple replies and errors) — enough for test set-up such
// as FLUSHALL or CONFIG SET without a client library.
func (s *Server) Do(ctx context.Context, args ...string) (string, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", s.Addr())
	if err != nil {
		return "", err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	} else {
		c.SetDeadline(time.Now().Add(10 * time.Second))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if strings.HasPrefix(line, "-") {
		return "", errors.New(line[1:])
	}
	return line, nil
}
