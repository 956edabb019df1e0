package answer

import (
	"context"
	"sync"
	"time"

	"github.com/slack-go/slack"
)

// statusKeeper shows "sandpiper is thinking…" under the thread while an
// answer is worked on. Slack clears a status after two minutes without a
// reply, so it is renewed every Limits.Status. A workspace or channel
// where statuses are not available turns it off for the answer; the
// reaction on the question still shows the bot is working.
type statusKeeper struct {
	a     *Answerer
	m     Question
	stopc chan struct{}
	done  chan struct{}

	mu      sync.Mutex
	text    string
	changed chan struct{}
	off     bool
}

func (a *Answerer) keepStatus(ctx context.Context, m Question) *statusKeeper {
	s := &statusKeeper{a: a, m: m, stopc: make(chan struct{}), done: make(chan struct{}), text: "is thinking…", changed: make(chan struct{}, 1)}
	go s.loop(ctx)
	return s
}

func (s *statusKeeper) loop(ctx context.Context) {
	defer close(s.done)
	t := time.NewTicker(s.a.lim.Status)
	defer t.Stop()
	s.send(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.stopc:
			return
		case <-t.C:
		case <-s.changed:
		}
		s.send(ctx)
	}
}

func (s *statusKeeper) send(ctx context.Context) {
	s.mu.Lock()
	text, off := s.text, s.off
	s.mu.Unlock()
	if off {
		return
	}
	err := s.a.api.SetAssistantThreadsStatusContext(ctx, slack.AssistantThreadsSetStatusParameters{
		ChannelID: s.m.Channel, ThreadTS: s.m.ThreadTS, Status: text,
	})
	if err != nil {
		s.a.log.Debug("assistant status unavailable", "channel", s.m.Channel, "err", err)
		s.mu.Lock()
		s.off = true
		s.mu.Unlock()
	}
}

// set changes the status text.
func (s *statusKeeper) set(text string) {
	s.mu.Lock()
	changed := s.text != text
	s.text = text
	s.mu.Unlock()
	if changed {
		select {
		case s.changed <- struct{}{}:
		default:
		}
	}
}

// stop ends the renewals; the bot's next message clears the status.
func (s *statusKeeper) stop() {
	select {
	case <-s.stopc:
	default:
		close(s.stopc)
	}
	<-s.done
}
