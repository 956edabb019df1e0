package slacktest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Slack's limits for streamed messages, as the fake enforces them.
const (
	// StreamCallChars bounds the markdown_text of one startStream,
	// appendStream or stopStream call (docs.slack.dev).
	StreamCallChars = 12000
	// StreamMessageChars bounds the text of one streamed message in
	// total. Slack documents 12,000 characters for the markdown of one
	// message; that a stream is held to it is unconfirmed, so the fake is
	// strict.
	StreamMessageChars = 12000
)

// chunkTypes are the chunk types chat.*Stream accept.
var chunkTypes = map[string]bool{"markdown_text": true, "task_update": true, "plan_update": true, "blocks": true}

// streamChunks returns the text and the tasks a stream call adds, or
// Slack's error: a chunk that does not match its documented shape is
// refused.
func streamChunks(form url.Values) (string, []Task, map[string]any) {
	var tasks []Task
	text := form.Get("markdown_text")
	if raw := form.Get("chunks"); raw != "" {
		var chunks []map[string]any
		if err := json.Unmarshal([]byte(raw), &chunks); err != nil {
			return "", nil, slackErr("invalid_chunks", "chunks must be a JSON array of objects")
		}
		for i, c := range chunks {
			typ, _ := c["type"].(string)
			if !chunkTypes[typ] {
				return "", nil, slackErr("invalid_chunks", fmt.Sprintf("unknown chunk type %q [json-pointer:/chunks/%d/type]", typ, i))
			}
			if typ == "task_update" {
				t, e := checkTaskUpdate(i, c)
				if e != nil {
					return "", nil, e
				}
				tasks = append(tasks, t)
			}
			if typ == "markdown_text" {
				t, ok := c["text"].(string)
				if !ok {
					return "", nil, slackErr("invalid_chunks", fmt.Sprintf("text is required [json-pointer:/chunks/%d/text]", i))
				}
				text += t
			}
		}
	}
	if n := utf8.RuneCountInString(text); n > StreamCallChars {
		return "", nil, slackErr("msg_too_long", fmt.Sprintf("markdown_text must be at most %d characters, got %d", StreamCallChars, n))
	}
	return text, tasks, nil
}

// startStream is chat.startStream: a new message in a thread, in the
// streaming state, addressed in channels (not DMs) to a recipient.
func (s *Server) startStream(form url.Values) map[string]any {
	channel, thread := form.Get("channel"), form.Get("thread_ts")
	switch {
	case channel == "":
		return slackErr("channel_not_found")
	case thread == "":
		return slackErr("invalid_arguments", "thread_ts is required")
	case channelType(channel) != "im" && (form.Get("recipient_user_id") == "" || form.Get("recipient_team_id") == ""):
		return slackErr("invalid_arguments", "recipient_user_id and recipient_team_id are required when streaming in a channel")
	}
	if s.streamRefusal != "" {
		return slackErr(s.streamRefusal)
	}
	text, tasks, e := streamChunks(form)
	if e != nil {
		return e
	}
	if m := form.Get("task_display_mode"); m != "" && m != "timeline" && m != "plan" {
		return slackErr("invalid_arguments", "task_display_mode must be timeline or plan")
	}
	s.mu.Lock()
	if s.findLocked(channel, thread) == nil {
		s.mu.Unlock()
		return slackErr("thread_not_found")
	}
	m := &Message{
		Channel: channel, TS: s.nextTS(), ThreadTS: thread, User: BotUserID, BotID: BotID,
		Text: text, Streamed: true, Streaming: true,
		Recipient: form.Get("recipient_user_id"), RecipientTeam: form.Get("recipient_team_id"),
	}
	addTasks(m, tasks)
	s.messages = append(s.messages, m)
	s.cond.Broadcast()
	echo := s.EchoBotMessages
	s.mu.Unlock()
	if echo {
		s.sendMessageEvent(m, "")
	}
	return map[string]any{"channel": channel, "ts": m.TS}
}

// streaming returns the streamed message a call names, or Slack's error;
// s.mu is held.
func (s *Server) streamingLocked(form url.Values) (*Message, map[string]any) {
	channel, ts := form.Get("channel"), form.Get("ts")
	if channel == "" {
		return nil, slackErr("channel_not_found")
	}
	if ts == "" {
		return nil, slackErr("invalid_arguments", "ts is required")
	}
	m := s.findLocked(channel, ts)
	switch {
	case m == nil || m.Deleted:
		return nil, slackErr("message_not_found")
	case m.User != BotUserID:
		return nil, slackErr("cant_update_message")
	case m.UserStopped:
		return nil, slackErr("stopped_by_user")
	case !m.Streaming:
		return nil, slackErr("message_not_in_streaming_state")
	}
	return m, nil
}

// grow adds text to a streamed message within [StreamMessageChars].
func grow(m *Message, text string) map[string]any {
	if n := utf8.RuneCountInString(m.Text) + utf8.RuneCountInString(text); n > StreamMessageChars {
		return slackErr("msg_too_long", fmt.Sprintf("a streamed message holds at most %d characters", StreamMessageChars))
	}
	m.Text += text
	return nil
}

// appendStream is chat.appendStream: more text for a streaming message.
func (s *Server) appendStream(form url.Values) map[string]any {
	text, tasks, e := streamChunks(form)
	if e != nil {
		return e
	}
	if text == "" && form.Get("chunks") == "" {
		return slackErr("no_text")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, e := s.streamingLocked(form)
	if e != nil {
		return e
	}
	if e := grow(m, text); e != nil {
		return e
	}
	addTasks(m, tasks)
	m.Appends++
	s.cond.Broadcast()
	return map[string]any{"channel": m.Channel, "ts": m.TS}
}

// stopStream is chat.stopStream: the last text, blocks shown under it
// and metadata; the message leaves the streaming state.
func (s *Server) stopStream(form url.Values) map[string]any {
	text, tasks, e := streamChunks(form)
	if e != nil {
		return e
	}
	if e := checkBlocks(form.Get("blocks")); e != nil {
		return e
	}
	s.mu.Lock()
	m, e := s.streamingLocked(form)
	if e != nil {
		s.mu.Unlock()
		return e
	}
	if e := grow(m, text); e != nil {
		s.mu.Unlock()
		return e
	}
	addTasks(m, tasks)
	m.Streaming = false
	if b := form.Get("blocks"); b != "" {
		m.Blocks = json.RawMessage(b)
	}
	if md := form.Get("metadata"); md != "" {
		m.Metadata = json.RawMessage(md)
	}
	s.cond.Broadcast()
	echo := s.EchoBotMessages
	s.mu.Unlock()
	if echo {
		s.sendMessageEvent(m, "message_changed")
	}
	return map[string]any{"channel": m.Channel, "ts": m.TS}
}

// deleteMessage is chat.delete of one of the bot's messages.
func (s *Server) deleteMessage(form url.Values) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.findLocked(form.Get("channel"), form.Get("ts"))
	switch {
	case m == nil || m.Deleted:
		return slackErr("message_not_found")
	case m.User != BotUserID:
		return slackErr("cant_delete_message")
	}
	m.Deleted, m.Streaming = true, false
	s.cond.Broadcast()
	return map[string]any{"channel": m.Channel, "ts": m.TS}
}

// RefuseStreaming makes every chat.startStream fail with Slack's error
// code (unknown_method, channel_type_not_supported,
// not_allowed_token_type, missing_scope …); "" accepts them again.
func (s *Server) RefuseStreaming(code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.streamRefusal = code
}

// RateLimit makes method answer HTTP 429 with Retry-After (whole
// seconds, at least 1) to any call beyond n in a sliding window of per,
// as Slack's tiers do per workspace; n <= 0 removes the limit. Refused
// calls do not count.
func (s *Server) RateLimit(method string, n int, per, retryAfter time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n <= 0 {
		delete(s.limits, method)
		return
	}
	s.limits[method] = &rateLimit{n: n, per: per, retryAfter: max(int((retryAfter+time.Second-1)/time.Second), 1)}
}

type rateLimit struct {
	n          int
	per        time.Duration
	retryAfter int // seconds
	accepted   []time.Time
	limitedAt  []time.Time
}

// limitedLocked reports whether a call of method now is beyond its rate
// limit, and otherwise counts it; s.mu is held.
func (s *Server) limitedLocked(method string, now time.Time) *Failure {
	l := s.limits[method]
	if l == nil {
		return nil
	}
	keep := l.accepted[:0]
	for _, t := range l.accepted {
		if now.Sub(t) < l.per {
			keep = append(keep, t)
		}
	}
	l.accepted = keep
	if len(l.accepted) >= l.n {
		l.limitedAt = append(l.limitedAt, now)
		return &Failure{Status: http.StatusTooManyRequests, RetryAfter: l.retryAfter, Error: "ratelimited"}
	}
	l.accepted = append(l.accepted, now)
	return nil
}

// RateLimited counts the calls of method answered 429 by [Server.RateLimit].
func (s *Server) RateLimited(method string) int {
	return len(s.RateLimitedAt(method))
}

// RateLimitedAt returns when calls of method were answered 429 by
// [Server.RateLimit].
func (s *Server) RateLimitedAt(method string) []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.limits[method]; l != nil {
		return append([]time.Time(nil), l.limitedAt...)
	}
	return nil
}

// reMarkdownLink finds a Markdown link or image, [text](url), whose text
// hides where it goes.
var reMarkdownLink = regexp.MustCompile(`!?\[([^\[\]]*)\]\(\s*<?([^\s()<>]+)>?[^()]*\)`)

// reBroadcast finds @channel, @here and @everyone as Slack's markdown
// may read them.
var reBroadcast = regexp.MustCompile(`(?i)@(channel|here|everyone)\b`)

// markdownLinks returns the links standard Markdown renders in s that
// show text other than their address.
func markdownLinks(s string) []string {
	var out []string
	for _, m := range reMarkdownLink.FindAllStringSubmatch(s, -1) {
		if strings.TrimSpace(m[1]) != m[2] {
			out = append(out, m[0])
		}
	}
	return out
}

// AnyMessage reports whether a message in the workspace satisfies f; s.mu
// is held (call it from a [Server.Wait] condition).
func (s *Server) AnyMessage(f func(Message) bool) bool {
	for _, m := range s.messages {
		if f(*m) {
			return true
		}
	}
	return false
}

// haltStreams is Slack's own Stop: the thread's streaming messages (those
// named, or all) leave the streaming state, and calls on them fail with
// stopped_by_user.
func (s *Server) haltStreams(channel, threadTS string, named []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.messages {
		if m.Channel == channel && m.ThreadTS == threadTS && m.Streaming && (len(named) == 0 || slices.Contains(named, m.TS)) {
			m.Streaming, m.UserStopped = false, true
		}
	}
	s.cond.Broadcast()
}
