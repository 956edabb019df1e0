package socket_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gorilla/websocket"
	"github.com/slack-go/slack"

	"github.com/sandpiper-bot/sandpiper/bot/internal/socket"
	"github.com/sandpiper-bot/sandpiper/bot/slacktest"
)

// The tests run in synctest bubbles, against fakes served over an
// in-memory network: back-offs, ping timeouts and Retry-After pass on the
// bubble's fake clock, and synctest.Wait says when everything that can
// happen has happened.

// client returns a client of fake, over fake's in-memory network.
func client(fake *slacktest.Server, cfg socket.Config) *socket.Client {
	api := slack.New(slacktest.BotToken, slack.OptionAppLevelToken(slacktest.AppToken), slack.OptionAPIURL(fake.URL), slack.OptionHTTPClient(fake.Client()))
	return newClient(api, cfg, fake.DialContext)
}

func newClient(api *slack.Client, cfg socket.Config, dial func(context.Context, string, string) (net.Conn, error)) *socket.Client {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c := socket.New(api, cfg)
	socket.SetDial(c, dial)
	return c
}

// start runs a client against fake until the test ends and returns it
// with Run's result.
func start(t *testing.T, fake *slacktest.Server, cfg socket.Config) (*socket.Client, <-chan error) {
	t.Helper()
	c := client(fake, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	finished := make(chan struct{})
	go func() { done <- c.Run(ctx); close(finished) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-finished:
		case <-time.After(5 * time.Second):
			t.Error("Run did not return after cancel")
		}
	})
	return c, done
}

// next returns the next event that satisfies keep, failing after a while.
func next(t *testing.T, c *socket.Client, keep func(socket.Event) bool) socket.Event {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case evt := <-c.Events():
			if keep(evt) {
				return evt
			}
		case <-timeout:
			t.Fatal("no such event")
		}
	}
}

func request(typ string) func(socket.Event) bool {
	return func(e socket.Event) bool { return e.Kind == socket.Request && e.Type == typ }
}

func chatter(n int) slacktest.Event {
	return slacktest.Event{Inner: map[string]any{"type": "message", "channel": "C1", "user": "U1", "text": fmt.Sprint("chatter ", n), "ts": fmt.Sprintf("1700000000.%06d", n)}}
}

func TestRequestsArriveWhole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := slacktest.NewInMemory(t)
		c, _ := start(t, fake, socket.Config{})
		next(t, c, request("hello"))
		env, err := fake.SendEvent(chatter(1))
		if err != nil {
			t.Fatal(err)
		}
		evt := next(t, c, request("events_api"))
		if evt.EnvelopeID != env || !strings.Contains(string(evt.Frame), `"text":"chatter 1"`) {
			t.Errorf("event = %s %s", evt.EnvelopeID, evt.Frame)
		}
		if _, ok := fake.WaitAck(env, 5*time.Second); !ok {
			t.Error("not acked")
		}
	})
}

// TestAcksDoNotWaitForTheConsumer: every envelope is acked although nobody
// reads the events, and whatever the payload holds.
func TestAcksDoNotWaitForTheConsumer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := slacktest.NewInMemory(t)
		start(t, fake, socket.Config{})
		var envs []string
		for i := range 200 {
			env, err := fake.SendEvent(chatter(i))
			if err != nil {
				t.Fatal(err)
			}
			envs = append(envs, env)
		}
		odd := []byte(`{"envelope_id":"env-odd","type":"no_such_type_v9","payload":[1,{"x":"\u00e9"}]}`)
		if err := fake.SendEnvelope("env-odd", odd); err != nil {
			t.Fatal(err)
		}
		for _, env := range append(envs, "env-odd") {
			if _, ok := fake.WaitAck(env, 5*time.Second); !ok {
				t.Fatalf("envelope %s not acked", env)
			}
		}
		if n := len(fake.Acks()); n != len(envs)+1 {
			t.Errorf("acks = %d, want %d (one each)", n, len(envs)+1)
		}
	})
}

func TestBadFrames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := slacktest.NewInMemory(t)
		c, _ := start(t, fake, socket.Config{})
		next(t, c, request("hello"))
		if err := fake.SendEnvelope("", []byte("not json {")); err != nil {
			t.Fatal(err)
		}
		if evt := next(t, c, func(e socket.Event) bool { return e.Kind == socket.BadFrame }); evt.Err == nil || string(evt.Frame) != "not json {" {
			t.Errorf("bad frame event = %+v", evt)
		}
		// The connection survives one bad frame.
		env, _ := fake.SendEvent(chatter(2))
		if evt := next(t, c, request("events_api")); evt.EnvelopeID != env {
			t.Errorf("envelope %s, want %s", evt.EnvelopeID, env)
		}
		if opened, _ := fake.Connections(); opened != 1 {
			t.Errorf("connections opened = %d, want 1", opened)
		}
	})
}

// TestDisconnectOverlaps: after a disconnect frame the old socket is still
// served until the next one is open, so nothing sent meanwhile is lost.
func TestDisconnectOverlaps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := slacktest.NewInMemory(t)
		c, _ := start(t, fake, socket.Config{})
		next(t, c, request("hello"))
		// The first reopen attempt fails, so the old socket stays the only
		// one for the back-off.
		fake.FailNext("apps.connections.open", slacktest.Failure{Status: http.StatusInternalServerError})
		if err := fake.Disconnect("warning"); err != nil {
			t.Fatal(err)
		}
		next(t, c, func(e socket.Event) bool { return e.Kind == socket.ConnectionError })
		env, err := fake.SendEvent(chatter(3))
		if err != nil {
			t.Fatal(err)
		}
		if opened, _ := fake.Connections(); opened != 1 {
			t.Fatalf("the event went out on connection %d; want the old socket still open during the back-off", opened)
		}
		if evt := next(t, c, request("events_api")); evt.EnvelopeID != env {
			t.Errorf("envelope %s, want %s", evt.EnvelopeID, env)
		}
		next(t, c, func(e socket.Event) bool { return e.Kind == socket.Connected })
		synctest.Wait()
		if o, open := fake.Connections(); o != 2 || open != 1 {
			t.Fatalf("connections opened %d, open %d; want 2, 1 (the old one closed)", o, open)
		}
		env, _ = fake.SendEvent(chatter(4))
		if evt := next(t, c, request("events_api")); evt.EnvelopeID != env {
			t.Errorf("envelope %s, want %s", evt.EnvelopeID, env)
		}
	})
}

func TestDroppedSocketReconnects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := slacktest.NewInMemory(t)
		c, _ := start(t, fake, socket.Config{})
		next(t, c, request("hello"))
		fake.DropConnections()
		next(t, c, request("hello"))
		env, _ := fake.SendEvent(chatter(5))
		if evt := next(t, c, request("events_api")); evt.EnvelopeID != env {
			t.Errorf("envelope %s, want %s", evt.EnvelopeID, env)
		}
	})
}

func TestRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		cut  func(*slacktest.Server)
		want string
	}{
		{"link_disabled", func(s *slacktest.Server) { s.Disconnect("link_disabled") }, "Socket Mode is turned off for this app"},
		{"token revoked", func(s *slacktest.Server) {
			s.FailNext("apps.connections.open", slacktest.Failure{Error: "token_revoked"})
			s.DropConnections()
		}, "token_revoked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fake := slacktest.NewInMemory(t)
				c, done := start(t, fake, socket.Config{})
				next(t, c, request("hello"))
				tc.cut(fake)
				select {
				case err := <-done:
					var re *socket.RefusedError
					if !errors.As(err, &re) || !strings.Contains(err.Error(), tc.want) {
						t.Errorf("Run = %v, want a RefusedError saying %q", err, tc.want)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("Run went on")
				}
			})
		})
	}
}

func TestRateLimitedOpenWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := slacktest.NewInMemory(t)
		fake.FailNext("apps.connections.open", slacktest.Failure{Status: http.StatusTooManyRequests, RetryAfter: 1})
		c, _ := start(t, fake, socket.Config{})
		t0 := time.Now()
		evt := next(t, c, func(e socket.Event) bool { return e.Kind == socket.ConnectionError })
		if evt.Backoff < time.Second {
			t.Errorf("back-off %v, want Retry-After's 1s", evt.Backoff)
		}
		next(t, c, request("hello"))
		if waited := time.Since(t0); waited < time.Second {
			t.Errorf("reopened after %v, want Retry-After's 1s", waited)
		}
	})
}

// TestSilentConnectionIsReopened: a server that sends nothing and answers
// no ping is left after the ping timeout.
func TestSilentConnectionIsReopened(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var dials atomic.Int32
		c := endpoint(t, socket.Config{PingTimeout: 300 * time.Millisecond}, nil, func(ws *websocket.Conn, quit <-chan struct{}) {
			dials.Add(1)
			ws.WriteMessage(websocket.TextMessage, []byte(`{"type":"hello"}`))
			<-quit // never read, so never pong
		})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		defer func() { cancel(); <-done }()
		t0 := time.Now()
		deadline := time.After(10 * time.Second)
		hellos := 0
		for hellos < 2 {
			select {
			case evt := <-c.Events():
				if evt.Kind == socket.Request && evt.Type == "hello" {
					hellos++
				}
			case <-deadline:
				t.Fatalf("dials = %d; the silent connection was not reopened", dials.Load())
			}
		}
		if d := time.Since(t0); d < 300*time.Millisecond {
			t.Errorf("reopened after %v, before the ping timeout", d)
		}
	})
}

// endpoint is a minimal Socket Mode server on an in-memory network:
// apps.connections.open (after calling opened, if set) and a websocket
// that serve handles until quit is closed, at the end of the test. It
// returns a client of it.
func endpoint(t *testing.T, cfg socket.Config, opened func(), serve func(ws *websocket.Conn, quit <-chan struct{})) *socket.Client {
	t.Helper()
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	pipes := slacktest.NewPipes()
	quit := make(chan struct{})
	srv := &httptest.Server{Listener: pipes, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/apps.connections.open" {
			if opened != nil {
				opened()
			}
			fmt.Fprintf(w, `{"ok":true,"url":"ws://%s/socket"}`, pipes.Addr())
			return
		}
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		serve(ws, quit)
	})}}
	srv.Start()
	hc := &http.Client{Transport: &http.Transport{DialContext: pipes.DialContext}}
	t.Cleanup(func() { close(quit); srv.Close(); hc.CloseIdleConnections() })
	api := slack.New("xoxb-x", slack.OptionAppLevelToken("xapp-x"), slack.OptionAPIURL(srv.URL+"/api/"), slack.OptionHTTPClient(hc))
	return newClient(api, cfg, pipes.DialContext)
}

// drain reads Events until nothing more is on its way: the bubble is idle
// and Events empty.
func drain(c *socket.Client) []socket.Event {
	var out []socket.Event
	for {
		synctest.Wait()
		select {
		case evt := <-c.Events():
			out = append(out, evt)
		default:
			return out
		}
	}
}

func requests(evts []socket.Event) map[string]bool {
	got := map[string]bool{}
	for _, e := range evts {
		if e.Kind == socket.Request && e.EnvelopeID != "" {
			got[e.EnvelopeID] = true
		}
	}
	return got
}

// TestAckedIsNeverLostAcrossReconnect: with the consumer behind, a reader
// whose connection Run replaces still hands on the frame it acked.
func TestAckedIsNeverLostAcrossReconnect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := slacktest.NewInMemory(t)
		c, _ := start(t, fake, socket.Config{})
		next(t, c, request("hello"))
		// A slow consumer, so the old socket's reader is waiting with an
		// acked frame when Run replaces the socket after a failed first
		// attempt.
		var mu sync.Mutex
		var evts []socket.Event
		stop, stopped := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(stopped)
			for {
				select {
				case evt := <-c.Events():
					mu.Lock()
					evts = append(evts, evt)
					mu.Unlock()
					time.Sleep(200 * time.Microsecond)
				case <-stop:
					return
				}
			}
		}()
		fake.FailNext("apps.connections.open", slacktest.Failure{Status: http.StatusInternalServerError})
		if err := fake.Disconnect("refresh_requested"); err != nil {
			t.Fatal(err)
		}
		for i := range 3000 {
			// Slack sends at its pace, across the switch: faster than
			// the consumer reads, so the queue is full by the time the
			// back-off (75–100ms) has passed, and on for 120ms of the
			// bubble's clock.
			time.Sleep(40 * time.Microsecond)
			// A send can meet the old socket as the client closes it,
			// before the fake has noticed; Slack would send again on the
			// new one.
			for try := 0; ; try++ {
				_, err := fake.SendEvent(chatter(i))
				if err == nil {
					break
				}
				if try == 50 {
					t.Fatal(err)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		// Let the consumer catch up: 3000 events at 200µs is 0.6s of the
		// bubble's clock.
		time.Sleep(2 * time.Second)
		close(stop)
		<-stopped
		got := requests(append(evts, drain(c)...))
		if opened, _ := fake.Connections(); opened < 2 {
			t.Fatalf("%d connections opened, want the switch", opened)
		}
		for _, a := range fake.Acks() {
			if !got[a.EnvelopeID] {
				t.Errorf("envelope %s was acked but never delivered", a.EnvelopeID)
			}
		}
	})
}

// TestAckedIsKeptAtShutdown: what was read and acked as Run ends is in
// Events or Leftover.
func TestAckedIsKeptAtShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := slacktest.NewInMemory(t)
		c := client(fake, socket.Config{})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		for i := range 1100 {
			fake.SendEvent(chatter(i))
		}
		// The reader acks one frame past the full queue and waits with
		// it: wait until it does.
		synctest.Wait()
		cancel()
		<-done
		got := requests(drain(c))
		for _, e := range c.Leftover() {
			got[e.EnvelopeID] = true
		}
		acks := fake.Acks()
		if len(acks) < 1000 || len(acks) == 1100 {
			t.Fatalf("%d acks, want the queue's worth (the rest unread)", len(acks))
		}
		for _, a := range acks {
			if !got[a.EnvelopeID] {
				t.Errorf("envelope %s was acked but is neither in Events nor in Leftover", a.EnvelopeID)
			}
		}
	})
}

// TestQuickDropsBackOff: an endpoint that closes every connection at once
// is not asked for a new one in a tight loop.
func TestQuickDropsBackOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var opens atomic.Int32
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		// A tight loop never lets the bubble's clock reach the second:
		// end it.
		opened := func() {
			if opens.Add(1) > 10 {
				cancel()
			}
		}
		c := endpoint(t, socket.Config{}, opened, func(ws *websocket.Conn, _ <-chan struct{}) {
			ws.WriteMessage(websocket.TextMessage, []byte(`{"type":"hello"}`))
		})
		go func() {
			for {
				select {
				case <-c.Events():
				case <-ctx.Done():
					return
				}
			}
		}()
		c.Run(ctx)
		if n := opens.Load(); n > 10 {
			t.Errorf("apps.connections.open called %d times in a second", n)
		}
	})
}

// TestViewSubmissionAck: a view submission is acked with the bot's
// response (once), or with none when the bot takes longer than
// ViewAckTimeout; other interactive frames are acked at once.
func TestViewSubmissionAck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := slacktest.NewInMemory(t)
		c, _ := start(t, fake, socket.Config{})
		next(t, c, request("hello"))
		frame := func(env string) []byte {
			return []byte(`{"envelope_id":"` + env + `","type":"interactive","payload":{"type":"view_submission","view":{"id":"V1"}},"accepts_response_payload":true}`)
		}
		fake.SendEnvelope("env-answered", frame("env-answered"))
		evt := next(t, c, request("interactive"))
		if evt.Respond == nil {
			t.Fatal("a view submission without Respond")
		}
		time.Sleep(time.Second)
		synctest.Wait()
		for _, a := range fake.Acks() {
			if a.EnvelopeID == "env-answered" {
				t.Fatalf("acked before the bot responded: %+v", a)
			}
		}
		if err := evt.Respond(map[string]any{"response_action": "errors", "errors": map[string]string{"tz": "bad"}}); err != nil {
			t.Fatal(err)
		}
		if evt.Respond(nil) == nil {
			t.Error("a second response went too")
		}
		ack, ok := fake.WaitAck("env-answered", time.Second)
		if !ok || string(ack.Payload) != `{"errors":{"tz":"bad"},"response_action":"errors"}` {
			t.Errorf("ack %s (%v)", ack.Payload, ok)
		}

		fake.SendEnvelope("env-late", frame("env-late"))
		evt = next(t, c, request("interactive"))
		start := time.Now()
		ack, ok = fake.WaitAck("env-late", 10*time.Second)
		if !ok || len(ack.Payload) != 0 || time.Since(start) != socket.ViewAckTimeout {
			t.Errorf("unanswered: ack %s after %s (%v), want none after %s", ack.Payload, time.Since(start), ok, socket.ViewAckTimeout)
		}
		if evt.Respond(nil) == nil {
			t.Error("a response after the timeout's ack went too")
		}

		click := []byte(`{"envelope_id":"env-click","type":"interactive","payload":{"type":"block_actions"}}`)
		fake.SendEnvelope("env-click", click)
		if evt := next(t, c, request("interactive")); evt.Respond != nil {
			t.Error("a click has Respond")
		}
		if _, ok := fake.WaitAck("env-click", time.Second); !ok {
			t.Error("a click not acked at once")
		}
	})
}
