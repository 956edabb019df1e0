// Package socket is a Slack Socket Mode client that acknowledges every
// envelope as soon as it is read, before parsing it or handing it on.
//
// It speaks the protocol slack-go's socketmode.Client speaks, and opens
// connections with slack-go's apps.connections.open, but differs where the
// bot needs it to:
//
//   - The ack is written by the connection's reader the moment a frame
//     arrives, after reading only the frame's type and envelope id. The
//     frame is handed on whole, for the consumer to decode what it needs,
//     so a burst of large payloads, a payload nobody can parse, or a
//     consumer that is busy never delays an ack. (slack-go acks after its
//     consumer has the event, and parses every payload into its full
//     types first — about 40 µs per message event.)
//   - When Slack announces a disconnect ("warning", "refresh_requested") the
//     next connection is opened before the old one is closed, so events
//     keep flowing across the switch.
//   - "link_disabled" (Socket Mode turned off for the app) ends Run with an
//     error saying so, instead of reconnecting in a loop; a
//     "too_many_websockets" disconnect backs off before reconnecting.
//   - A request once acknowledged is never dropped, since Slack will not
//     send it again: a reader whose connection is being replaced still
//     hands its frame on, and what is read as Run ends is kept for
//     [Client.Leftover].
//   - A connection Slack drops at once backs off before the next, so a
//     broken endpoint is not hammered with apps.connections.open.
//   - The client pings too, so a silent network path is noticed even when
//     Slack's pings are sparse.
package socket

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/slack-go/slack"

	"github.com/sandpiper-bot/sandpiper/sandbox/httpretry"
)

// Limits and defaults.
const (
	// DefaultPingTimeout is how long a connection may stay silent (no
	// frame, ping or pong) before it is dropped and reopened.
	DefaultPingTimeout = 30 * time.Second
	// writeTimeout bounds one ack, ping or pong write.
	writeTimeout = 10 * time.Second
	// handshakeTimeout bounds the websocket upgrade.
	handshakeTimeout = 30 * time.Second
	// maxBadFrames is how many unreadable frames in a row end a connection.
	maxBadFrames = 10
	// queued is how many events may wait for the consumer before reading
	// (and so acking) stops.
	queued = 1024
	// Reconnect back-off: first and largest wait.
	backoffMin = 100 * time.Millisecond
	backoffMax = 2 * time.Minute
	// crowdedWait is the wait after a too_many_websockets disconnect.
	crowdedWait = 30 * time.Second
	// shortLived is how long a connection must last for its end not to
	// count as a failure: one that Slack drops at once backs off.
	shortLived = 10 * time.Second
	// maxFrame bounds one frame read (Slack's are a few KiB).
	maxFrame = 16 << 20
)

// Kind says what an [Event] reports.
type Kind int

const (
	Connecting      Kind = iota // dialling; Attempt counts from 1
	Connected                   // a connection is open
	Disconnected                // no connection is open (Err says why)
	ConnectionError             // an attempt failed: Err; the next in Backoff
	Request                     // Slack sent a frame: Type, EnvelopeID, Frame
	BadFrame                    // a frame that is not JSON: Err, Frame
)

// Event is something that happened on the socket.
type Event struct {
	Kind Kind
	// Type is the frame's type: "hello", "events_api", "slash_commands",
	// "interactive" … (disconnect frames are handled here, not delivered).
	Type string
	// EnvelopeID is the frame's envelope id, already acknowledged but
	// for a view submission (see Respond).
	EnvelopeID string
	// Respond, set for a view submission (an "interactive" frame whose
	// payload is a view_submission), acknowledges it with payload (nil:
	// none, and the modal closes), as Slack wants a modal's field errors
	// or next view. Only the first call counts. Not called within
	// [ViewAckTimeout], the frame is acked with none.
	Respond func(payload any) error
	// Frame is the whole frame, as Slack sent it.
	Frame []byte

	Attempt int
	Backoff time.Duration
	Err     error
}

// Config configures a [Client].
type Config struct {
	// PingTimeout is how long a connection may stay silent before it is
	// reopened; DefaultPingTimeout when zero. The client pings at a third
	// of it.
	PingTimeout time.Duration
	// Logger receives connection-level logs; slog.Default when nil.
	Logger *slog.Logger
	// OnAck, if set, is called from the reader with the time from reading
	// an envelope to having written its ack.
	OnAck func(time.Duration)
}

// Client is a Socket Mode connection that reconnects as Slack asks. Create
// it with [New], check the app token with [Client.Open], then [Client.Run]
// it and read [Client.Events].
type Client struct {
	api    *slack.Client
	cfg    Config
	log    *slog.Logger
	events chan Event
	dialer *websocket.Dialer // honours the proxy the environment names

	mu       sync.Mutex
	leftover []Event // acked requests read as Run was ending
}

// New returns a client that opens connections with api, which must carry
// the app-level token (slack.OptionAppLevelToken).
func New(api *slack.Client, cfg Config) *Client {
	if cfg.PingTimeout <= 0 {
		cfg.PingTimeout = DefaultPingTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Client{api: api, cfg: cfg, log: cfg.Logger, events: make(chan Event, queued),
		dialer: &websocket.Dialer{Proxy: http.ProxyFromEnvironment, HandshakeTimeout: handshakeTimeout}}
}

// Events delivers what happens on the socket, in order: connection state,
// and the frames Slack sends (already acknowledged).
func (c *Client) Events() <-chan Event { return c.events }

// Leftover returns, once Run has returned, the requests that were read
// and acknowledged but found Events full as Run ended. Slack will not send
// them again: handle them after draining Events.
func (c *Client) Leftover() []Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.leftover
	c.leftover = nil
	return out
}

// Open calls apps.connections.open once, which checks the app token and
// that Socket Mode is on. Run opens its own connections.
func (c *Client) Open(ctx context.Context) error {
	_, _, err := c.api.StartSocketModeContext(ctx)
	return err
}

// RefusedError is returned by Run when Slack refuses the connection for
// good: a bad or revoked app token, or Socket Mode turned off.
type RefusedError struct {
	Reason string // the Slack error code or disconnect reason
	Err    error
}

func (e *RefusedError) Error() string {
	if e.Reason == "link_disabled" {
		return "Slack closed the connection with reason link_disabled: Socket Mode is turned off for this app (turn it on under Settings → Socket Mode)"
	}
	return fmt.Sprintf("apps.connections.open refused: %v", e.Err)
}

func (e *RefusedError) Unwrap() error { return e.Err }

// Run connects and serves until ctx is done, when it returns ctx.Err(), or
// until Slack refuses the connection for good, when it returns a
// [*RefusedError]. Transient failures are retried with back-off.
func (c *Client) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var cur *conn
	defer func() {
		if cur != nil {
			cur.close()
		}
		cancel()
		wg.Wait()
	}()
	open := func() error {
		var err error
		cur, err = c.connect(ctx, &wg)
		return err
	}
	if err := open(); err != nil {
		return err
	}
	drops := 0 // connections in a row that ended soon after opening
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-cur.ended:
			c.log.Warn("slack socket closed; reconnecting", "err", err)
			cur.close()
			c.emit(ctx, Event{Kind: Disconnected, Err: err})
			if time.Since(cur.opened) < shortLived {
				// Dropped at once: do not hammer apps.connections.open.
				drops++
				wait := backoff(drops)
				c.emit(ctx, Event{Kind: ConnectionError, Attempt: drops, Backoff: wait, Err: err})
				if err := httpretry.Sleep(ctx, wait); err != nil {
					return err
				}
			} else {
				drops = 0
			}
			if err := open(); err != nil {
				return err
			}
		case reason := <-cur.disconnect:
			c.log.Info("slack asked to reconnect", "reason", reason)
			old := cur
			switch reason {
			case "link_disabled":
				return &RefusedError{Reason: reason}
			case "too_many_websockets":
				// Another process holds this app's connections; wait
				// before competing for one again.
				old.close()
				c.emit(ctx, Event{Kind: Disconnected, Err: errors.New("slack closed the connection: too many connections for this app")})
				if err := httpretry.Sleep(ctx, crowdedWait+rand.N(crowdedWait/3)); err != nil {
					return err
				}
			}
			// Open the next connection before closing this one, which Slack
			// keeps serving until then.
			err := open()
			old.close()
			if err != nil {
				return err
			}
		}
	}
}

// connect opens a connection, retrying transient failures with back-off,
// and starts its reader.
func (c *Client) connect(ctx context.Context, wg *sync.WaitGroup) (*conn, error) {
	for attempt := 1; ; attempt++ {
		c.emit(ctx, Event{Kind: Connecting, Attempt: attempt})
		ws, err := c.dial(ctx)
		if err == nil {
			cn := &conn{ws: ws, ended: make(chan error, 1), disconnect: make(chan string, 1), done: make(chan struct{}), opened: time.Now()}
			ws.SetReadLimit(maxFrame)
			c.emit(ctx, Event{Kind: Connected, Attempt: attempt})
			wg.Go(func() { c.read(ctx, cn) })
			wg.Go(func() { c.ping(cn) })
			return cn, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if code, ok := refused(err); ok {
			return nil, &RefusedError{Reason: code, Err: err}
		}
		wait := backoff(attempt)
		if rl, ok := errors.AsType[*slack.RateLimitedError](err); ok {
			wait = max(wait, rl.RetryAfter)
		}
		c.emit(ctx, Event{Kind: ConnectionError, Attempt: attempt, Backoff: wait, Err: err})
		if err := httpretry.Sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// dial calls apps.connections.open and dials the URL it returns.
func (c *Client) dial(ctx context.Context) (*websocket.Conn, error) {
	_, url, err := c.api.StartSocketModeContext(ctx)
	if err != nil {
		return nil, err
	}
	ws, resp, err := c.dialer.DialContext(ctx, url, http.Header{"Origin": {"https://api.slack.com"}})
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("dial: %w", err)
	}
	return ws, nil
}

// refused reports whether err is Slack refusing the app token for good.
func refused(err error) (string, bool) {
	if se, ok := errors.AsType[slack.SlackErrorResponse](err); ok {
		switch se.Err {
		case "invalid_auth", "not_authed", "account_inactive", "token_revoked", "not_allowed_token_type":
			return se.Err, true
		}
	}
	if sc, ok := errors.AsType[slack.StatusCodeError](err); ok && sc.Code == http.StatusNotFound {
		return "http 404", true
	}
	return "", false
}

// conn is one websocket and what its reader reports.
type conn struct {
	ws         *websocket.Conn
	wmu        sync.Mutex  // data writes: the reader's acks, Respond's
	ended      chan error  // the reader stopped: the socket is unusable
	disconnect chan string // Slack sent a disconnect frame with this reason
	once       sync.Once
	done       chan struct{}
	opened     time.Time
}

func (cn *conn) close() {
	cn.once.Do(func() {
		close(cn.done)
		cn.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
		cn.ws.Close()
	})
}

// header is what the reader reads of a frame.
type header struct {
	Type       string `json:"type"`
	EnvelopeID string `json:"envelope_id"`
	Reason     string `json:"reason"`
}

// ViewAckTimeout is how long a view submission's ack waits for the bot's
// response: within Slack's 3 seconds.
const ViewAckTimeout = 2500 * time.Millisecond

// viewSubmission tells a view_submission payload at a glance, without
// parsing it (Slack writes compact JSON).
var viewSubmission = []byte(`"type":"view_submission"`)

// read is the connection's only reader: it reads a frame, acks it at
// once (a view submission when the bot responds), and hands it on.
func (c *Client) read(ctx context.Context, cn *conn) {
	ws := cn.ws
	alive := func() { ws.SetReadDeadline(time.Now().Add(c.cfg.PingTimeout)) }
	alive()
	ws.SetPingHandler(func(data string) error {
		alive()
		// As gorilla's default handler: a failed pong shows up as a failed read.
		ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(writeTimeout))
		return nil
	})
	ws.SetPongHandler(func(string) error { alive(); return nil })
	bad := 0
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			cn.ended <- err
			return
		}
		at := time.Now()
		alive()
		var h header
		if err := json.Unmarshal(data, &h); err != nil {
			if bad++; bad >= maxBadFrames {
				cn.ended <- fmt.Errorf("%d unreadable frames in a row: %w", bad, err)
				return
			}
			if !c.hand(ctx, Event{Kind: BadFrame, Frame: data, Err: err}) {
				return
			}
			continue
		}
		bad = 0
		if h.Type == "interactive" && h.EnvelopeID != "" && bytes.Contains(data, viewSubmission) {
			respond := cn.deferAck(h.EnvelopeID, at, c.cfg.OnAck, c.log)
			if !c.hand(ctx, Event{Kind: Request, Type: h.Type, EnvelopeID: h.EnvelopeID, Frame: data, Respond: respond}) {
				return
			}
			continue
		}
		if h.EnvelopeID != "" {
			if err := cn.ack(h.EnvelopeID, nil); err != nil {
				cn.ended <- fmt.Errorf("ack: %w", err)
				return
			}
			if c.cfg.OnAck != nil {
				c.cfg.OnAck(time.Since(at))
			}
		}
		if h.Type == "disconnect" {
			// Keep reading: Slack may still deliver on this socket until
			// Run has opened the next one and closes this.
			select {
			case cn.disconnect <- h.Reason:
			default:
			}
			continue
		}
		if !c.hand(ctx, Event{Kind: Request, Type: h.Type, EnvelopeID: h.EnvelopeID, Frame: data}) {
			return
		}
	}
}

// hand gives the consumer an event from a connection's reader, also from
// a connection Run has closed: an acked request must not be lost. If Run
// is ending it keeps the event for Leftover and returns false.
func (c *Client) hand(ctx context.Context, evt Event) bool {
	select {
	case c.events <- evt:
		return true
	case <-ctx.Done():
	}
	select { // Events may have room after all
	case c.events <- evt:
	default:
		c.mu.Lock()
		c.leftover = append(c.leftover, evt)
		c.mu.Unlock()
	}
	return false
}

// ack tells Slack the envelope arrived, with payload when it is not nil.
func (cn *conn) ack(envelopeID string, payload any) error {
	msg, err := json.Marshal(struct {
		EnvelopeID string `json:"envelope_id"`
		Payload    any    `json:"payload,omitempty"`
	}{envelopeID, payload})
	if err != nil {
		return err
	}
	cn.wmu.Lock()
	defer cn.wmu.Unlock()
	cn.ws.SetWriteDeadline(time.Now().Add(writeTimeout))
	return cn.ws.WriteMessage(websocket.TextMessage, msg)
}

// deferAck returns the Respond of a view submission read at at: the
// first call acks with its payload; ViewAckTimeout after at, an ack with
// none goes if no call came.
func (cn *conn) deferAck(envelopeID string, at time.Time, onAck func(time.Duration), log *slog.Logger) func(any) error {
	var once sync.Once
	send := func(payload any) error {
		err := errors.New("socket: already responded")
		once.Do(func() {
			err = cn.ack(envelopeID, payload)
			if err == nil && onAck != nil {
				onAck(time.Since(at))
			}
		})
		return err
	}
	time.AfterFunc(time.Until(at.Add(ViewAckTimeout)), func() {
		if send(nil) == nil {
			log.Warn("a view submission was acked without a response: the bot took too long", "envelope_id", envelopeID)
		}
	})
	return send
}

// ping pings the server at a third of the ping timeout; the pong, like
// any frame, keeps the connection alive.
func (c *Client) ping(cn *conn) {
	t := time.NewTicker(c.cfg.PingTimeout / 3)
	defer t.Stop()
	for {
		select {
		case <-cn.done:
			return
		case <-t.C:
			// WriteControl may run beside the reader's writes. A failure
			// shows up as a failed read.
			cn.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeTimeout))
		}
	}
}

// emit hands the consumer an event from Run unless ctx ends first.
func (c *Client) emit(ctx context.Context, evt Event) {
	select {
	case c.events <- evt:
	case <-ctx.Done():
	}
}

// backoff is the wait before reconnect attempt n+1: doubling from
// backoffMin up to backoffMax, with jitter.
func backoff(attempt int) time.Duration {
	return httpretry.Backoff(attempt-1, backoffMin, backoffMax, 2)
}
