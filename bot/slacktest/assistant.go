package slacktest

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sandpiper-bot/sandpiper/bot/internal/slackapi"
)

// DefaultScopes are the bot token's scopes unless a test sets others
// ([Server.SetScopes]): those manifest.yaml asks for, required and
// optional.
var DefaultScopes = slices.Concat(slackapi.RequiredScopes, slices.Sorted(maps.Keys(slackapi.OptionalScopes)))

// SetScopes replaces the bot token's scopes: auth.test lists them, and
// methods that need a scope the token lacks fail with missing_scope, as
// Slack's do. It models an app installed before a scope was added.
func (s *Server) SetScopes(scopes ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scopes = slices.Clone(scopes)
}

// needScopeLocked returns Slack's missing_scope error unless the token
// has one of scopes; s.mu is held.
func (s *Server) needScopeLocked(scopes ...string) map[string]any {
	for _, sc := range scopes {
		if slices.Contains(s.scopes, sc) {
			return nil
		}
	}
	e := slackErr("missing_scope")
	e["needed"] = strings.Join(scopes, ",")
	e["provided"] = strings.Join(s.scopes, ",")
	return e
}

// SuggestedPrompts are the prompts an app set on an agent thread.
type SuggestedPrompts struct {
	Title   string
	Prompts []Prompt
}

// Prompt is one suggested prompt.
type Prompt struct {
	Title   string `json:"title"`
	Message string `json:"message"`
}

// setSuggestedPrompts is assistant.threads.setSuggestedPrompts: it needs
// assistant:write, a channel_id, 1 to 4 prompts each with a title and a
// message, and, when thread_ts is given, a thread that exists. Without
// thread_ts (the agent view) the prompts go under the channel's latest
// message, recorded under thread "".
func (s *Server) setSuggestedPrompts(f url.Values) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.needScopeLocked("assistant:write"); e != nil {
		return e
	}
	channel, thread := f.Get("channel_id"), f.Get("thread_ts")
	if channel == "" {
		return slackErr("invalid_arguments", "missing required field: channel_id")
	}
	var prompts []Prompt
	if err := json.Unmarshal([]byte(f.Get("prompts")), &prompts); err != nil || len(prompts) == 0 {
		return slackErr("invalid_arguments", "missing required field: prompts")
	}
	if len(prompts) > 4 {
		return slackErr("invalid_arguments", "must provide an array with no more than 4 items [json-pointer:/prompts]")
	}
	for i, p := range prompts {
		if strings.TrimSpace(p.Title) == "" || strings.TrimSpace(p.Message) == "" {
			return slackErr("invalid_arguments", fmt.Sprintf("prompts must have a title and a message [json-pointer:/prompts/%d]", i))
		}
	}
	if thread != "" && s.findLocked(channel, thread) == nil {
		return slackErr("invalid_thread_ts")
	}
	s.prompts[channel+"/"+thread] = SuggestedPrompts{Title: f.Get("title"), Prompts: prompts}
	s.cond.Broadcast()
	return map[string]any{}
}

// setTitle is assistant.threads.setTitle: it needs assistant:write, a
// channel_id, a thread that exists, and a title.
func (s *Server) setTitle(f url.Values) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.needScopeLocked("assistant:write"); e != nil {
		return e
	}
	channel, thread, title := f.Get("channel_id"), f.Get("thread_ts"), f.Get("title")
	switch {
	case channel == "":
		return slackErr("invalid_arguments", "missing required field: channel_id")
	case thread == "":
		return slackErr("invalid_arguments", "missing required field: thread_ts")
	case strings.TrimSpace(title) == "":
		return slackErr("invalid_arguments", "missing required field: title")
	case utf8.RuneCountInString(title) > 255: // unconfirmed: Slack documents no limit
		return slackErr("invalid_arguments", "title must be less than 256 characters")
	case s.findLocked(channel, thread) == nil:
		return slackErr("invalid_thread_ts")
	}
	s.titles[channel+"/"+thread] = title
	s.cond.Broadcast()
	return map[string]any{}
}

// Title returns an agent thread's title, "" when none was set.
func (s *Server) Title(channel, threadTS string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.titles[channel+"/"+threadTS]
}

// StartAssistantThread is user opening a new thread in the app's
// assistant view (the legacy assistant_view): Slack creates the thread's
// root message in the DM channel and sends assistant_thread_started. It
// returns the thread's ts.
func (s *Server) StartAssistantThread(channel, user string) (string, error) {
	s.mu.Lock()
	root := &Message{Channel: channel, TS: s.nextTS(), User: user, Text: "New chat"}
	s.messages = append(s.messages, root)
	s.cond.Broadcast()
	s.mu.Unlock()
	_, err := s.SendEvent(Event{Inner: map[string]any{
		"type": "assistant_thread_started",
		"assistant_thread": map[string]any{
			"user_id": user, "channel_id": channel, "thread_ts": root.TS,
			"context": map[string]any{"channel_id": "", "team_id": TeamID, "enterprise_id": ""},
		},
		"event_ts": root.TS,
	}})
	return root.TS, err
}

// OpenAppHome is user opening a tab of the app ("messages" is the DM,
// where the agent view lives, "home" the home tab): Slack sends
// app_home_opened.
func (s *Server) OpenAppHome(channel, user, tab string) error {
	_, err := s.SendEvent(Event{Inner: map[string]any{
		"type": "app_home_opened", "user": user, "channel": channel, "tab": tab, "event_ts": s.nextTSLocked(),
	}})
	return err
}

// StopAgentSession is user clicking Slack's own Stop on an agent thread
// with streaming messages: Slack halts the streams and sends
// agent_session_stopped.
func (s *Server) StopAgentSession(channel, threadTS, user string, streaming ...string) error {
	s.haltStreams(channel, threadTS, streaming)
	inner := map[string]any{
		"type": "agent_session_stopped", "channel": channel, "thread_ts": threadTS, "user": user,
		"event_ts": s.nextTSLocked(),
	}
	if len(streaming) > 0 {
		inner["streaming_message_ts"] = streaming
	}
	_, err := s.SendEvent(Event{Inner: inner})
	return err
}

// WaitPrompts waits until prompts are set on a thread (thread "" for
// those set without thread_ts) and returns them, or false after timeout.
func (s *Server) WaitPrompts(channel, threadTS string, timeout time.Duration) (SuggestedPrompts, bool) {
	var p SuggestedPrompts
	ok := s.Wait(timeout, func() bool {
		var set bool
		p, set = s.prompts[channel+"/"+threadTS]
		return set
	})
	return p, ok
}

// WaitTitle waits until a thread has a title and returns it, or "" after
// timeout.
func (s *Server) WaitTitle(channel, threadTS string, timeout time.Duration) string {
	var title string
	s.Wait(timeout, func() bool {
		title = s.titles[channel+"/"+threadTS]
		return title != ""
	})
	return title
}
