package slacktest

import (
	"math/rand/v2"
	"time"
)

// spreading is how the fake delivers envelopes when the app holds several
// Socket Mode connections (Slack allows up to 10, one per client, e.g.
// one per bot replica).
type spreading struct {
	// Spread sends each envelope to one open connection chosen at random,
	// as Slack spreads payloads across an app's connections; a retry
	// ([Server.Redeliver], [Event.RetryOf]) goes to another connection
	// than the envelope it retries when another is open. Without Spread,
	// everything goes to the newest open connection.
	Spread bool

	sentTo map[string]*conn // envelope id → the connection it went to
}

// pick returns the connection for an envelope (nil if none opens within
// wait): the newest open one, or with Spread a random open one, other
// than the one envelope retryOf went to when it can. s.mu is not held.
func (s *Server) pick(wait time.Duration, retryOf string) *conn {
	if !s.Spread {
		return s.current(wait)
	}
	var c *conn
	s.Wait(wait, func() bool {
		avoid := s.sentTo[retryOf]
		var open, others []*conn
		for _, o := range s.conns {
			o.wmu.Lock()
			if !o.closed {
				open = append(open, o)
				if o != avoid {
					others = append(others, o)
				}
			}
			o.wmu.Unlock()
		}
		if len(others) > 0 {
			open = others
		}
		if len(open) > 0 {
			c = open[rand.IntN(len(open))]
		}
		return c != nil
	})
	return c
}

// delivered records which connection an envelope went to; s.mu is held.
func (s *Server) delivered(envelopeID string, c *conn) {
	if s.sentTo == nil {
		s.sentTo = map[string]*conn{}
	}
	s.sentTo[envelopeID] = c
}

// Receivers returns, for each open connection in the order they were
// opened, how many envelopes it was sent.
func (s *Server) Receivers() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := map[*conn]int{}
	for _, c := range s.sentTo {
		n[c]++
	}
	var out []int
	for _, c := range s.conns {
		c.wmu.Lock()
		if !c.closed {
			out = append(out, n[c])
		}
		c.wmu.Unlock()
	}
	return out
}
