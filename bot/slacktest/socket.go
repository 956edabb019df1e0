package slacktest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/gorilla/websocket"
)

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

func (s *Server) serveSocket(w http.ResponseWriter, r *http.Request) {
	ticket := r.URL.Query().Get("ticket")
	s.mu.Lock()
	ok := s.tickets[ticket]
	delete(s.tickets, ticket) // single use, as Slack's
	s.mu.Unlock()
	if !ok {
		http.Error(w, "invalid ticket", http.StatusUnauthorized)
		return
	}
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &conn{ws: ws, done: make(chan struct{})}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ws.Close()
		return
	}
	s.conns = append(s.conns, c)
	n := 0
	for _, o := range s.conns {
		o.wmu.Lock()
		if !o.closed {
			n++
		}
		o.wmu.Unlock()
	}
	s.cond.Broadcast()
	s.mu.Unlock()

	hello := map[string]any{
		"type":            "hello",
		"num_connections": n,
		"debug_info":      map[string]any{"host": "slacktest", "build_number": 1, "approximate_connection_time": 18060},
		"connection_info": map[string]any{"app_id": AppID},
	}
	if err := c.write(hello); err != nil {
		c.close()
		return
	}
	go s.pinger(c)
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			c.close()
			s.mu.Lock()
			s.cond.Broadcast()
			s.mu.Unlock()
			return
		}
		var ack struct {
			EnvelopeID string          `json:"envelope_id"`
			Payload    json.RawMessage `json:"payload"`
		}
		if json.Unmarshal(data, &ack) != nil || ack.EnvelopeID == "" {
			continue
		}
		s.mu.Lock()
		a := Ack{EnvelopeID: ack.EnvelopeID, Payload: ack.Payload, At: time.Now(), Sent: s.sent[ack.EnvelopeID]}
		s.acks = append(s.acks, a)
		if _, dup := s.ackByID[a.EnvelopeID]; !dup {
			s.ackByID[a.EnvelopeID] = a
		}
		s.cond.Broadcast()
		s.mu.Unlock()
	}
}

func (s *Server) pinger(c *conn) {
	t := time.NewTicker(s.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
			c.wmu.Lock()
			err := c.ws.WriteControl(websocket.PingMessage, []byte("ping"), time.Now().Add(time.Second))
			c.wmu.Unlock()
			if err != nil {
				return
			}
		}
	}
}

func (c *conn) write(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return c.writeRaw(data)
}

func (c *conn) writeRaw(data []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return c.ws.WriteMessage(websocket.TextMessage, data)
}

func (c *conn) close() {
	c.wmu.Lock()
	if !c.closed {
		c.closed = true
		close(c.done)
		c.ws.Close()
	}
	c.wmu.Unlock()
}

// current returns the newest open connection, waiting up to wait for one.
func (s *Server) current(wait time.Duration) *conn {
	var c *conn
	s.Wait(wait, func() bool {
		for i := len(s.conns) - 1; i >= 0 && c == nil; i-- {
			s.conns[i].wmu.Lock()
			if !s.conns[i].closed {
				c = s.conns[i]
			}
			s.conns[i].wmu.Unlock()
		}
		return c != nil
	})
	return c
}

// Connections reports how many sockets were ever opened and how many are open.
func (s *Server) Connections() (opened, open int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.wmu.Lock()
		if !c.closed {
			open++
		}
		c.wmu.Unlock()
	}
	return len(s.conns), open
}

// WaitConnections waits until at least n sockets have been opened and one is open.
func (s *Server) WaitConnections(n int, timeout time.Duration) bool {
	return s.Wait(timeout, func() bool {
		opened, open := 0, 0
		for _, c := range s.conns {
			opened++
			c.wmu.Lock()
			if !c.closed {
				open++
			}
			c.wmu.Unlock()
		}
		return opened >= n && open > 0
	})
}

// SendEnvelope sends a raw envelope (already JSON) over the current socket.
func (s *Server) SendEnvelope(envelopeID string, raw []byte) error {
	return s.sendEnvelope(envelopeID, raw, 10*time.Second, "")
}

func (s *Server) sendEnvelope(envelopeID string, raw []byte, wait time.Duration, retryOf string) error {
	c := s.pick(wait, retryOf)
	if c == nil {
		return fmt.Errorf("slacktest: no open socket")
	}
	s.mu.Lock()
	s.sent[envelopeID] = time.Now()
	s.delivered(envelopeID, c)
	s.mu.Unlock()
	return c.writeRaw(raw)
}

// Event is an Events API delivery.
type Event struct {
	EventID      string
	RetryAttempt int
	Inner        map[string]any
	// RetryOf is the envelope this one retries: with [Server.Spread] it
	// goes to another connection.
	RetryOf string
}

// SendEvent wraps inner in an event_callback envelope and sends it. It
// returns the envelope id.
func (s *Server) SendEvent(ev Event) (string, error) {
	return s.sendEvent(ev, 10*time.Second)
}

func (s *Server) sendEvent(ev Event, wait time.Duration) (string, error) {
	s.mu.Lock()
	env := s.nextID("env-")
	if ev.EventID == "" {
		ev.EventID = s.nextID("Ev")
	}
	s.mu.Unlock()
	payload := map[string]any{
		"token":          "verification-token",
		"team_id":        TeamID,
		"api_app_id":     AppID,
		"type":           "event_callback",
		"event_id":       ev.EventID,
		"event_time":     time.Now().Unix(),
		"event":          ev.Inner,
		"authorizations": []map[string]any{{"team_id": TeamID, "user_id": BotUserID, "is_bot": true}},
	}
	reason := ""
	if ev.RetryAttempt > 0 {
		reason = "timeout"
	}
	raw, err := json.Marshal(map[string]any{
		"envelope_id":              env,
		"payload":                  payload,
		"type":                     "events_api",
		"accepts_response_payload": false,
		"retry_attempt":            ev.RetryAttempt,
		"retry_reason":             reason,
	})
	if err != nil {
		return "", err
	}
	return env, s.sendEnvelope(env, raw, wait, ev.RetryOf)
}

// Disconnect sends a disconnect frame with reason (e.g. "refresh_requested")
// on the current socket.
func (s *Server) Disconnect(reason string) error {
	c := s.current(10 * time.Second)
	if c == nil {
		return fmt.Errorf("slacktest: no open socket")
	}
	return c.write(map[string]any{"type": "disconnect", "reason": reason, "debug_info": map[string]any{"host": "slacktest"}})
}

// DropConnections closes every open socket without a close frame.
func (s *Server) DropConnections() {
	s.mu.Lock()
	conns := append([]*conn(nil), s.conns...)
	s.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
}

func channelType(channel string) string {
	switch {
	case strings.HasPrefix(channel, "D"):
		return "im"
	case strings.HasPrefix(channel, "G"):
		return "group"
	default:
		return "channel"
	}
}

func (s *Server) sendMessageEvent(m *Message, subtype string) {
	inner := s.wireMessage(m, false)
	inner["channel"] = m.Channel
	inner["channel_type"] = channelType(m.Channel)
	inner["event_ts"] = m.TS
	if subtype == "message_changed" {
		inner = map[string]any{
			"type": "message", "subtype": subtype, "channel": m.Channel, "channel_type": channelType(m.Channel),
			"hidden": true, "ts": m.TS, "event_ts": m.TS, "message": s.wireMessage(m, false),
			"previous_message": s.wireMessage(m, false),
		}
	}
	_, _ = s.sendEvent(Event{Inner: inner}, 0) // dropped when no socket is open
}

// Post is a human posting a message, with the events Slack sends for it.
type Post struct {
	Channel  string
	User     string
	Text     string
	ThreadTS string
	// Files are attached to the message (a file_share); the fake gives
	// them ids and url_private links that only the bot token can read.
	Files []File
}

// Delivery records the envelopes a [Server.UserPosts] sent.
type Delivery struct {
	TS        string
	Envelopes []string
	EventIDs  []string
	inners    []map[string]any
}

// UserPosts stores a message from a human and delivers the events Slack
// would: message.* always, and app_mention too when the text mentions the
// bot outside a DM.
func (s *Server) UserPosts(p Post) (Delivery, error) {
	s.mu.Lock()
	m := &Message{Channel: p.Channel, TS: s.nextTS(), ThreadTS: p.ThreadTS, User: p.User, Text: p.Text}
	for _, f := range p.Files {
		f.ID = s.nextID("F")
		f.User = p.User
		fillFile(&f)
		s.files[f.ID] = &f
		m.Files = append(m.Files, f)
	}
	s.messages = append(s.messages, m)
	s.cond.Broadcast()
	s.mu.Unlock()

	d := Delivery{TS: m.TS}
	msg := s.wireMessage(m, false)
	msg["channel"] = m.Channel
	msg["channel_type"] = channelType(m.Channel)
	msg["event_ts"] = m.TS
	msg["client_msg_id"] = "cm-" + m.TS
	d.inners = append(d.inners, msg)
	if channelType(p.Channel) != "im" && strings.Contains(p.Text, "<@"+BotUserID+">") {
		mention := map[string]any{"type": "app_mention", "user": p.User, "text": p.Text, "ts": m.TS, "channel": m.Channel, "event_ts": m.TS}
		if files, ok := msg["files"]; ok {
			mention["files"] = files
		}
		if p.ThreadTS != "" {
			mention["thread_ts"] = p.ThreadTS
		}
		d.inners = append(d.inners, mention)
	}
	for _, inner := range d.inners {
		s.mu.Lock()
		id := s.nextID("Ev")
		s.mu.Unlock()
		env, err := s.SendEvent(Event{EventID: id, Inner: inner})
		if err != nil {
			return d, err
		}
		d.Envelopes = append(d.Envelopes, env)
		d.EventIDs = append(d.EventIDs, id)
	}
	return d, nil
}

// Redeliver sends the deliveries' events again as Slack's retries do: same
// event_id, retry_attempt 1, new envelope ids (with [Server.Spread], to
// other connections).
func (s *Server) Redeliver(d Delivery) error {
	for i, inner := range d.inners {
		if _, err := s.SendEvent(Event{EventID: d.EventIDs[i], RetryAttempt: 1, Inner: inner, RetryOf: d.Envelopes[i]}); err != nil {
			return err
		}
	}
	return nil
}

// Edit changes a human's message and sends message_changed.
func (s *Server) Edit(channel, ts, text string) error {
	s.mu.Lock()
	m := s.findLocked(channel, ts)
	if m == nil {
		s.mu.Unlock()
		return fmt.Errorf("slacktest: no message %s/%s", channel, ts)
	}
	prev := s.wireMessage(m, false)
	m.Text = text
	cur := s.wireMessage(m, false)
	cur["edited"] = map[string]any{"user": m.User, "ts": s.nextTS()}
	s.mu.Unlock()
	_, err := s.SendEvent(Event{Inner: map[string]any{
		"type": "message", "subtype": "message_changed", "channel": channel, "channel_type": channelType(channel),
		"hidden": true, "ts": s.nextTSLocked(), "event_ts": ts, "message": cur, "previous_message": prev,
	}})
	return err
}

func (s *Server) nextTSLocked() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nextTS()
}

// SlashCommand sends a slash command envelope and returns its envelope id.
func (s *Server) SlashCommand(channel, user, command, text string) (string, error) {
	s.mu.Lock()
	env := s.nextID("env-")
	rid := s.nextID("R")
	s.responses[rid] = responseURL{channel: channel, user: user}
	s.issueTriggerLocked("trig-"+rid, user)
	s.mu.Unlock()
	raw, err := json.Marshal(map[string]any{
		"envelope_id": env,
		"type":        "slash_commands",
		"payload": map[string]any{
			"token": "verification-token", "team_id": TeamID, "team_domain": "fake",
			"channel_id": channel, "channel_name": "general", "user_id": user, "user_name": user,
			"command": command, "text": text, "api_app_id": AppID,
			"response_url": s.http.URL + "/response/" + rid, "trigger_id": "trig-" + rid,
		},
		"accepts_response_payload": true,
	})
	if err != nil {
		return "", err
	}
	return env, s.SendEnvelope(env, raw)
}

// ---- inspection ----

// Wait blocks until cond (called with the fake's lock held) is true or
// timeout passes, and reports whether it became true.
func (s *Server) Wait(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	t := time.AfterFunc(timeout, func() {
		s.mu.Lock()
		s.cond.Broadcast()
		s.mu.Unlock()
	})
	defer t.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for !cond() {
		if s.closed || time.Now().After(deadline) {
			return false
		}
		s.cond.Wait()
	}
	return true
}

// WaitAck waits for the envelope's ack.
func (s *Server) WaitAck(envelopeID string, timeout time.Duration) (Ack, bool) {
	var a Ack
	ok := s.Wait(timeout, func() bool {
		x, found := s.ackByID[envelopeID]
		a = x
		return found
	})
	return a, ok
}

// Acks returns the acks received so far.
func (s *Server) Acks() []Ack {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Ack(nil), s.acks...)
}

// Calls returns the Web API calls of method ("" for all).
func (s *Server) Calls(method string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if method == "" || c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// Failed returns the Web API calls that failed (see [Call.Error]).
func (s *Server) Failed() []Call {
	var out []Call
	for _, c := range s.Calls("") {
		if c.Error != "" {
			out = append(out, c)
		}
	}
	return out
}

func copyMessage(m *Message) Message {
	c := *m
	c.Reactions = append([]string(nil), m.Reactions...)
	c.Files = append([]File(nil), m.Files...)
	return c
}

// Thread returns the thread's messages in order, the parent first,
// including ephemeral messages.
func (s *Server) Thread(channel, ts string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.threadLocked(channel, ts)
}

func (s *Server) threadLocked(channel, ts string) []Message {
	var out []Message
	for _, m := range s.messages {
		if m.Channel == channel && (m.TS == ts || m.ThreadTS == ts) {
			out = append(out, copyMessage(m))
		}
	}
	return out
}

// Messages returns every message in channel, in order.
func (s *Server) Messages(channel string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.messagesLocked(channel)
}

func (s *Server) messagesLocked(channel string) []Message {
	var out []Message
	for _, m := range s.messages {
		if m.Channel == channel {
			out = append(out, copyMessage(m))
		}
	}
	return out
}

// WaitMessages waits until cond holds for channel's messages and returns
// them.
func (s *Server) WaitMessages(channel string, timeout time.Duration, cond func([]Message) bool) ([]Message, bool) {
	var msgs []Message
	ok := s.Wait(timeout, func() bool {
		msgs = s.messagesLocked(channel)
		return cond(msgs)
	})
	return msgs, ok
}

// WaitThread waits until cond holds for the thread's messages and returns them.
func (s *Server) WaitThread(channel, ts string, timeout time.Duration, cond func([]Message) bool) ([]Message, bool) {
	var msgs []Message
	ok := s.Wait(timeout, func() bool {
		msgs = s.threadLocked(channel, ts)
		return cond(msgs)
	})
	return msgs, ok
}

// Status returns the assistant thread status last set on a thread.
func (s *Server) Status(channel, threadTS string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.statuses[channel+"/"+threadTS]
}

// Visible renders a message as a user reads it: its blocks' text (or its
// text without blocks), with Slack's entity escapes decoded, and its
// files' names. A streamed message shows its Markdown, then the blocks
// chat.stopStream put under it; its text is shown as written (Markdown
// has no &lt; entities to decode), after its tasks ("[task complete]
// Running Python · output"). A native chart shows as "[line chart] title".
func (m Message) Visible() string {
	var b strings.Builder
	var blocks []map[string]any
	_ = json.Unmarshal(m.Blocks, &blocks)
	if m.Streamed {
		var tasks string
		for _, t := range m.Tasks {
			tasks += "[task " + t.Status + "] " + strings.Join(slices.DeleteFunc([]string{t.Title, t.Details, t.Output}, func(s string) bool { return s == "" }), " · ") + "\n"
		}
		text := tasks + strings.ReplaceAll(m.Text, "\u200b", "") + "\n"
		m.Streamed, m.Text = false, ""
		return text + m.Visible()
	}
	if len(blocks) == 0 {
		b.WriteString(m.Text)
	}
	for _, bl := range blocks {
		switch bl["type"] {
		case "section", "header":
			if t, ok := bl["text"].(map[string]any); ok {
				b.WriteString(fmt.Sprint(t["text"]))
				b.WriteString("\n")
			}
		case "context":
			els, _ := bl["elements"].([]any)
			for _, e := range els {
				if em, ok := e.(map[string]any); ok && em["text"] != nil {
					b.WriteString(fmt.Sprint(em["text"]))
					b.WriteString(" ")
				}
			}
			b.WriteString("\n")
		case "markdown":
			b.WriteString(fmt.Sprint(bl["text"]))
			b.WriteString("\n")
		case "data_table":
			b.WriteString(tableText(bl))
		case "data_visualization":
			chart, _ := bl["chart"].(map[string]any)
			fmt.Fprintf(&b, "[%v chart] %v\n", chart["type"], bl["title"])
		}
	}
	for _, f := range m.Files {
		b.WriteString("[file " + f.Name + "]\n")
	}
	// A zero-width space is not seen.
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&", "\u200b", "").Replace(b.String())
}

// Pings reports the mentions and broadcasts Slack would act on in the
// message's text and blocks: <!channel>, <!here>, <!everyone>, <@U…> and
// <#C…>. Entities escaped as &lt;…&gt; are shown, not acted on, and are not
// reported.
// A streamed message's Markdown is also read for @channel, @here and
// @everyone written out, which Slack's markdown may act on.
func (m Message) Pings() []string {
	found := m.entities(func(tok string) bool {
		return strings.HasPrefix(tok, "!") || strings.HasPrefix(tok, "@") || strings.HasPrefix(tok, "#")
	})
	if m.Streamed {
		found = append(found, reBroadcast.FindAllString(m.Text, -1)...)
	}
	return found
}

// Links reports the <url|text> links Slack would render in the message,
// and in a streamed message's Markdown the [text](url) links whose text
// is not their address.
func (m Message) Links() []string {
	found := m.entities(func(tok string) bool {
		return reScheme.MatchString(tok)
	})
	if m.Streamed {
		found = append(found, markdownLinks(m.Text)...)
	}
	return found
}

// reScheme matches what Slack reads as a link target after "<".
var reScheme = regexp.MustCompile(`^(?i:[a-z][a-z0-9+.-]*://|mailto:)`)

// entities returns the <…> entities in the message's text and blocks that
// keep accepts.
func (m Message) entities(keep func(tok string) bool) []string {
	var found []string
	scan := func(s string) {
		for {
			i := strings.Index(s, "<")
			if i < 0 {
				return
			}
			j := strings.Index(s[i:], ">")
			if j < 0 {
				return
			}
			if tok := s[i+1 : i+j]; keep(tok) {
				found = append(found, "<"+tok+">")
			}
			s = s[i+j+1:]
		}
	}
	scan(m.Text)
	var v any
	_ = json.Unmarshal(m.Blocks, &v)
	walkStrings(v, scan)
	return found
}

func walkStrings(v any, f func(string)) {
	switch v := v.(type) {
	case string:
		f(v)
	case []any:
		for _, e := range v {
			walkStrings(e, f)
		}
	case map[string]any:
		for k, e := range v {
			if k == "type" || k == "block_id" || k == "action_id" {
				continue
			}
			walkStrings(e, f)
		}
	}
}

// Click is a person clicking an interactive element of a message.
type Click struct {
	Channel   string
	MessageTS string
	User      string
	ActionID  string
	// Value chooses the value sent when the element has several (the
	// positive or negative button of feedback_buttons); empty sends a
	// button's own value. It must be one of the element's values.
	Value string
}

// ClickButton delivers the block_actions envelope Slack sends over Socket
// Mode when c.User clicks the element with c.ActionID in a message. As in
// Slack, only what a message shows can be clicked: it fails when the
// message does not exist (or was deleted, or is an ephemeral message of
// someone else) or holds no element with that action_id. It returns the
// envelope id.
func (s *Server) ClickButton(c Click) (string, error) {
	s.mu.Lock()
	var m *Message
	for _, x := range s.messages {
		if x.Channel == c.Channel && x.TS == c.MessageTS && (!x.Ephemeral || x.EphemeralTo == c.User) {
			m = x
		}
	}
	if m == nil || m.Deleted {
		s.mu.Unlock()
		return "", fmt.Errorf("slacktest: no message %s/%s to click in", c.Channel, c.MessageTS)
	}
	var blocks []map[string]any
	_ = json.Unmarshal(m.Blocks, &blocks)
	var el map[string]any
	blockID := ""
	for i, b := range blocks {
		if e := findAction(b, c.ActionID); e != nil {
			el = e
			if blockID, _ = b["block_id"].(string); blockID == "" {
				blockID = fmt.Sprintf("slacktest-block-%d", i) // Slack makes one up
			}
			break
		}
	}
	if el == nil {
		s.mu.Unlock()
		return "", fmt.Errorf("slacktest: message %s/%s has no element with action_id %q", c.Channel, c.MessageTS, c.ActionID)
	}
	value, err := clickedValue(el, c.Value)
	if err != nil {
		s.mu.Unlock()
		return "", err
	}
	env := s.nextID("env-")
	rid := s.nextID("R")
	s.responses[rid] = responseURL{channel: c.Channel, user: c.User}
	s.issueTriggerLocked("trig-"+rid, c.User)
	name := s.users[c.User].Name
	msg := s.wireMessage(m, false)
	actionTS := s.nextTS()
	s.mu.Unlock()

	container := map[string]any{"type": "message", "message_ts": m.TS, "channel_id": m.Channel, "is_ephemeral": m.Ephemeral}
	if m.ThreadTS != "" {
		container["thread_ts"] = m.ThreadTS
	}
	act := map[string]any{"action_id": c.ActionID, "block_id": blockID, "type": el["type"], "action_ts": actionTS}
	if value != "" {
		act["value"] = value
	}
	if t, ok := el["text"]; ok {
		act["text"] = t
	}
	if st, ok := el["style"]; ok {
		act["style"] = st
	}
	payload := map[string]any{
		"type":                  "block_actions",
		"user":                  map[string]any{"id": c.User, "username": name, "name": name, "team_id": TeamID},
		"api_app_id":            AppID,
		"token":                 "verification-token",
		"container":             container,
		"trigger_id":            "trig-" + rid,
		"team":                  map[string]any{"id": TeamID, "domain": "fake"},
		"enterprise":            nil,
		"is_enterprise_install": false,
		"channel":               map[string]any{"id": m.Channel, "name": "general"},
		"message":               msg,
		"state":                 map[string]any{"values": map[string]any{}},
		"response_url":          s.http.URL + "/response/" + rid,
		"actions":               []any{act},
	}
	raw, err := json.Marshal(map[string]any{
		"envelope_id":              env,
		"payload":                  payload,
		"type":                     "interactive",
		"accepts_response_payload": false,
	})
	if err != nil {
		return "", err
	}
	return env, s.SendEnvelope(env, raw)
}

// findAction returns the element with actionID in v (a block), searched
// at any depth, or nil.
func findAction(v any, actionID string) map[string]any {
	switch v := v.(type) {
	case map[string]any:
		if v["action_id"] == actionID {
			return v
		}
		for _, e := range v {
			if f := findAction(e, actionID); f != nil {
				return f
			}
		}
	case []any:
		for _, e := range v {
			if f := findAction(e, actionID); f != nil {
				return f
			}
		}
	}
	return nil
}

// clickedValue is the value a click on el sends: a button's value, or the
// chosen one of the element's buttons (feedback_buttons).
func clickedValue(el map[string]any, want string) (string, error) {
	var values []string
	if v, ok := el["value"].(string); ok {
		values = append(values, v)
	}
	for _, k := range []string{"positive_button", "negative_button"} {
		if b, ok := el[k].(map[string]any); ok {
			if v, ok := b["value"].(string); ok {
				values = append(values, v)
			}
		}
	}
	switch {
	case want == "" && len(values) == 1:
		return values[0], nil
	case want == "" && len(values) == 0:
		return "", nil
	case want == "":
		return "", fmt.Errorf("slacktest: element %v has values %q: say which is clicked", el["action_id"], values)
	}
	for _, v := range values {
		if v == want {
			return v, nil
		}
	}
	return "", fmt.Errorf("slacktest: element %v has no value %q (it has %q)", el["action_id"], want, values)
}
