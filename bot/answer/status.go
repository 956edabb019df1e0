package answer

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/sandpiper-bot/sandpiper/bot/internal/slackapi"
	"github.com/sandpiper-bot/sandpiper/bot/render"
	"github.com/sandpiper-bot/sandpiper/sandbox/safetext"
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
		ChannelID: s.m.Channel, ThreadTS: s.m.ThreadTS, Status: text, LoadingMessages: loadingMessages(text),
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

// loadingFor are the loading messages Slack cycles through under each
// status. slack-go sends them joined by commas, so none may hold one
// ([loadingMessages] takes them out all the same).
var loadingFor = map[string][]string{
	"is thinking…":           {"Reading the question…", "Thinking it through…", "Working out what to compute…"},
	"is running Python…":     {"Running Python in a fresh sandbox…", "Waiting for the program to finish…", "Collecting what it printed…"},
	"is reading your files…": {"Reading your files…", "Looking at the first rows…"},
	"is posting files…":      {"Posting what the run wrote…", "Drawing the charts…"},
}

// loadingMessages returns the loading messages of a status, without
// commas.
func loadingMessages(status string) []string {
	msgs := loadingFor[status]
	out := make([]string, 0, len(msgs))
	for _, m := range msgs {
		if m = strings.TrimSpace(strings.ReplaceAll(m, ",", " ")); m != "" {
			out = append(out, m)
		}
	}
	return out
}

// session drives the thread's agent session (agents.sessions.setStatus):
// processing while an answer runs, which shows Slack's own stop control
// (its agent_session_stopped leads to [Answerer.Stop] as the Stop button
// does), and active once the answer is done. A workspace where the app
// is not an agent refuses it: sessions are then off, with one line in the
// log.
func (a *Answerer) session(ctx context.Context, m Question, status string) {
	if a.sessionsOff.Load() {
		return
	}
	ctx, cancel := slackapi.Context(ctx)
	defer cancel()
	p := slack.AgentSessionSetStatusParameters{Status: status, ChannelID: m.Channel, ThreadTS: m.ThreadTS}
	if status == slack.AgentSessionStatusProcessing {
		p.InitiatorUserID = m.User
		p.Title = render.Truncate(safetext.Line(strings.Join(strings.Fields(m.Text), " ")), sessionTitleChars)
	}
	_, err := a.api.SetAgentSessionStatusContext(ctx, p)
	if se, ok := errors.AsType[slack.SlackErrorResponse](err); ok && sessionRefused(se.Err) {
		if !a.sessionsOff.Swap(true) {
			a.log.Info("slack refused agent sessions; Slack's own stop control is off (the Stop button stays)", "err", slackapi.Explain(err))
		}
		return
	}
	if err != nil {
		a.log.Debug("agents.sessions.setStatus failed", "status", status, "err", slackapi.Explain(err))
	}
}

// sessionTitleChars bounds an agent session's title.
const sessionTitleChars = 80

func sessionRefused(code string) bool {
	switch code {
	case "unknown_method", "missing_scope", "not_allowed_token_type", "not_allowed", "method_deprecated", "not_an_agent", "invalid_auth":
		return true
	}
	return false
}
