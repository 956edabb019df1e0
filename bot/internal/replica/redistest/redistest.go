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
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
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
	// TLS serves TLS only, with a self-signed certificate for 127.0.0.1
	// (clients must skip verification, or trust [Server.CertFile]).
	TLS bool
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
	if opts.TLS {
		if err := writeCert(s.dir); err != nil {
			t.Fatalf("redistest: %v", err)
		}
	}
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
	plain := port
	if s.opts.TLS {
		plain = 0 // TLS only
	}
	args := []string{
		"--port", strconv.Itoa(plain),
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
	if s.opts.TLS {
		args = append(args, "--tls-port", strconv.Itoa(port),
			"--tls-cert-file", s.CertFile(), "--tls-key-file", filepath.Join(s.dir, "key.pem"),
			"--tls-auth-clients", "no")
	}
	cmd := exec.Command(s.bin, args...)
	cmd.Dir = s.dir
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", s.bin, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()

	deadline := time.Now().Add(startTimeout)
	for {
		if err := s.ping(port); err == nil {
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

// dial connects to the server on port, over TLS if it serves TLS.
func (s *Server) dial(ctx context.Context, port int) (net.Conn, error) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if s.opts.TLS {
		d := tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true}}
		return d.DialContext(ctx, "tcp", addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

// ping sends PING over RESP and expects +PONG.
func (s *Server) ping(port int) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c, err := s.dial(ctx, port)
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

// URL returns a redis:// URL for the server's database db (rediss:// with
// [Options.TLS]).
func (s *Server) URL(db int) string {
	scheme := "redis"
	if s.opts.TLS {
		scheme = "rediss"
	}
	return fmt.Sprintf("%s://%s/%d", scheme, s.Addr(), db)
}

// CertFile returns the path of the server's certificate (PEM), with
// [Options.TLS].
func (s *Server) CertFile() string { return filepath.Join(s.dir, "cert.pem") }

// writeCert writes a self-signed certificate for 127.0.0.1 and its key.
func writeCert(dir string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "redistest"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:                  true,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "cert.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "key.pem"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
}

// Stop stops the server (SIGTERM, then SIGKILL after a while) and waits for
// it to exit. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	cmd, done := s.take()
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
	cmd, done := s.take()
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
	s.mu.Lock()
	port := s.port
	s.mu.Unlock()
	c, err := s.dial(ctx, port)
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

// take returns the running server's process (nil if none) and the channel
// closed when it exits, and forgets them.
func (s *Server) take() (*exec.Cmd, chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	return cmd, done
}
