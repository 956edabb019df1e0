package redistest_test

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/bot/internal/replica/redistest"
)

func TestStartStopRestart(t *testing.T) {
	ctx := t.Context()
	for _, persist := range []bool{false, true} {
		srv := redistest.StartWith(t, redistest.Options{Persist: persist})
		if _, err := srv.Do(ctx, "SET", "k", "v"); err != nil {
			t.Fatal(err)
		}
		srv.Kill()
		if _, err := srv.Do(ctx, "PING"); err == nil {
			t.Fatal("PING answered after Kill")
		}
		srv.Restart()
		got, err := srv.Do(ctx, "EXISTS", "k")
		if err != nil {
			t.Fatal(err)
		}
		want := ":0" // an empty server
		if persist {
			want = ":1"
		}
		if got != want {
			t.Errorf("persist=%v: EXISTS k after restart = %s, want %s", persist, got, want)
		}
	}
}

func TestProxyCut(t *testing.T) {
	srv := redistest.Start(t)
	p := redistest.NewProxy(t, srv.Addr())
	addr := strings.TrimSuffix(strings.TrimPrefix(p.URL(0), "redis://"), "/0")
	ping := func() error {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write([]byte("PING\r\n")); err != nil {
			return err
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			return err
		}
		if line != "+PONG\r\n" {
			return fmt.Errorf("PING answered %q", line)
		}
		return nil
	}
	if err := ping(); err != nil {
		t.Fatalf("through the proxy: %v", err)
	}
	p.Cut()
	if err := ping(); err == nil {
		t.Fatal("PING answered through a cut proxy")
	}
	p.Restore()
	if err := ping(); err != nil {
		t.Fatalf("after Restore: %v", err)
	}
}

func TestTLS(t *testing.T) {
	srv := redistest.StartWith(t, redistest.Options{TLS: true})
	if !strings.HasPrefix(srv.URL(0), "rediss://") {
		t.Errorf("URL %s", srv.URL(0))
	}
	if got, err := srv.Do(t.Context(), "PING"); err != nil || got != "+PONG" {
		t.Fatalf("PING over TLS: %q, %v", got, err)
	}
	// Plain text is refused.
	c, err := net.Dial("tcp", srv.Addr())
	if err == nil {
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		c.Write([]byte("PING\r\n"))
		if line, err := bufio.NewReader(c).ReadString('\n'); err == nil && strings.Contains(line, "PONG") {
			t.Error("PONG over plain text")
		}
	}
}
