// Package slacktest is an in-process fake Slack for tests. It speaks the real
// wire formats: a Web API over HTTP (form-encoded bodies with the token in the
// form, JSON responses with ok/error) and a Socket Mode WebSocket that sends
// hello, event envelopes, slash commands, button clicks (block_actions) and
// disconnect frames, sends pings, and records the client's acks.
//
// It keeps a small workspace: channels' messages and threads, reactions,
// ephemeral messages, uploaded files, users with admin flags and assistant
// thread statuses. chat.postMessage and chat.update check Slack's Block Kit
// limits and fail the way Slack does. Failures (such as HTTP 429 with
// Retry-After) can be injected per method.
package slacktest

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"
)

// Identities of the fake workspace and app.
const (
	BotToken  = "xoxb-test-bot-token"
	AppToken  = "xapp-test-app-token"
	TeamID    = "T0TEST"
	AppID     = "A0TEST"
	BotUserID = "U0BOT"
	BotID     = "B0BOT"
)

// Message is a message as the fake workspace stores it.
type Message struct {
	Channel     string
	TS          string
	ThreadTS    string // empty for a message that is not in a thread
	User        string
	BotID       string
	Text        string
	Blocks      json.RawMessage
	Metadata    json.RawMessage
	Reactions   []string
	Files       []File
	Edits       int  // chat.update calls on this message
	Ephemeral   bool // seen only by EphemeralTo
	EphemeralTo string
	Deleted     bool

	// Streamed: the message was made by chat.startStream; its Text is
	// the Markdown streamed into it, its Blocks those chat.stopStream
	// put under the text. Streaming: it is still open for appends.
	Streamed, Streaming bool
	UserStopped         bool   // Slack's own Stop halted the stream
	Appends             int    // chat.appendStream calls that added to it
	Recipient           string // recipient_user_id of the stream
	RecipientTeam       string // recipient_team_id of the stream
	// Tasks are the tasks the stream showed (task_update chunks).
	Tasks []Task
}

// File is a file in the workspace: uploaded by the bot (files upload v2)
// or attached to a human's message ([Post.Files]).
type File struct {
	ID, Name, Title string
	Data            []byte
	// Mimetype and Filetype are Slack's; the fake guesses them from the
	// name when empty.
	Mimetype, Filetype string
	// Mode is "hosted" unless set ("external", "snippet", "post",
	// "tombstone" …); External marks a file kept outside Slack (Google
	// Drive …), which has no download URL on Slack.
	Mode     string
	External bool
	// Size overrides the size Slack reports (default len(Data)), to fake
	// files larger than a test wants to hold.
	Size int
	// AltTxt is the alt text an upload gave.
	AltTxt string
	// CheckFileInfo sends the file in events as Slack does for some
	// shares: only its id and file_access "check_file_info", so that the
	// app must call files.info.
	CheckFileInfo bool
	User          string
}

// size is the size Slack reports.
func (f *File) size() int {
	if f.Size > 0 {
		return f.Size
	}
	return len(f.Data)
}

// User is a workspace member as users.info reports it.
type User struct {
	ID      string
	Name    string
	IsAdmin bool
	IsOwner bool
	IsBot   bool
	// TZ is the user's time zone (IANA name); "" is America/Los_Angeles,
	// Slack's default.
	TZ string
	// Deleted: the user left the workspace (deactivated).
	Deleted bool
}

// Call is one Web API call the fake received.
type Call struct {
	Method string
	Form   url.Values
	At     time.Time
	// Error is how the call failed: the error code of an ok:false
	// answer (ratelimited for an HTTP 429, not_authed or invalid_auth
	// for a bad token); empty for a call that succeeded.
	Error string
}

// Ack is an acknowledgement the client sent over the socket.
type Ack struct {
	EnvelopeID string
	Payload    json.RawMessage
	At         time.Time // when the fake read it
	Sent       time.Time // when the fake sent the envelope
}

// Failure is an injected Web API failure.
type Failure struct {
	Status     int    // HTTP status; 0 means 200 with ok:false
	RetryAfter int    // seconds, sent as Retry-After when non-zero
	Error      string // Slack error code for ok:false
	// Match, if set, makes the failure wait for a call with a form value
	// containing it (e.g. a metadata event type); other calls go through.
	Match string
}

func formContains(form url.Values, s string) bool {
	for _, vs := range form {
		for _, v := range vs {
			if strings.Contains(v, s) {
				return true
			}
		}
	}
	return false
}

// Server is the fake Slack. Create it with [New].
type Server struct {
	t      testing.TB
	http   *httptest.Server
	pipes  *Pipes       // the in-memory network ([NewInMemory]), or nil
	client *http.Client // reaches http
	// URL is the Web API base URL, ending in "/", for slack.OptionAPIURL.
	URL string
	// PingInterval is how often the socket pings the client.
	PingInterval time.Duration
	// EchoBotMessages makes the fake send message events for the bot's own
	// posts and edits, as Slack does when the app subscribes to message.*.
	EchoBotMessages bool
	spreading

	mu        sync.Mutex
	cond      *sync.Cond
	clock     int64 // microseconds, for message timestamps
	seq       int
	messages  []*Message
	users     map[string]User
	archived  map[string]bool
	triggers  map[string]trigger
	views     []View
	calls     []Call
	acks      []Ack
	ackByID   map[string]Ack
	sent      map[string]time.Time // envelope id → sent
	failures  map[string][]Failure
	tickets   map[string]bool
	conns     []*conn
	files     map[string]*File
	downloads map[string]int      // file id → authorised downloads
	statuses  map[string]string   // channel/thread → assistant status
	loading   map[string][]string // channel/thread → the status's loading messages
	sessions  map[string][]string // channel/thread → agent session statuses set
	closed    bool
	responses map[string]responseURL

	streamRefusal string // error code for every chat.startStream
	limits        map[string]*rateLimit
	scopes        []string                    // the bot token's ([Server.SetScopes])
	prompts       map[string]SuggestedPrompts // channel/thread → last set
	titles        map[string]string           // channel/thread → agent thread title
}

type responseURL struct{ channel, user string }

type conn struct {
	ws     *websocket.Conn
	wmu    sync.Mutex
	done   chan struct{}
	closed bool
}

// New starts a fake Slack on a loopback port and stops it when the test
// ends.
func New(t testing.TB) *Server {
	s := newServer(t)
	s.http = httptest.NewServer(s.routes())
	s.client = s.http.Client()
	s.URL = s.http.URL + "/api/"
	return s
}

// NewInMemory is [New] for a test in a testing/synctest bubble: the fake
// is served over in-memory connections ([Pipes]), since loopback sockets
// would stall the bubble's clock. Clients reach it with [Server.Client]
// and dial its Socket Mode URL with [Server.DialContext]. Call it inside
// the bubble.
func NewInMemory(t testing.TB) *Server {
	s := newServer(t)
	s.pipes = NewPipes()
	s.http = &httptest.Server{Listener: s.pipes, Config: &http.Server{Handler: s.routes()}}
	s.http.Start()
	s.client = &http.Client{Transport: &http.Transport{DialContext: s.pipes.DialContext}}
	s.URL = s.http.URL + "/api/"
	return s
}

// Client returns an HTTP client that reaches the fake, for
// slack.OptionHTTPClient.
func (s *Server) Client() *http.Client { return s.client }

// DialContext opens a connection to the fake, whatever the address: the
// NetDialContext of a websocket dialer for its Socket Mode URL.
func (s *Server) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if s.pipes != nil {
		return s.pipes.DialContext(ctx, network, addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", s.http.Listener.Addr().String())
}

func newServer(t testing.TB) *Server {
	s := &Server{
		t:               t,
		PingInterval:    2 * time.Second,
		EchoBotMessages: true,
		clock:           1_700_000_000_000_000,
		users:           map[string]User{},
		archived:        map[string]bool{},
		triggers:        map[string]trigger{},
		sent:            map[string]time.Time{},
		ackByID:         map[string]Ack{},
		failures:        map[string][]Failure{},
		loading:         map[string][]string{},
		sessions:        map[string][]string{},
		tickets:         map[string]bool{},
		files:           map[string]*File{},
		downloads:       map[string]int{},
		statuses:        map[string]string{},
		responses:       map[string]responseURL{},
		limits:          map[string]*rateLimit{},
		scopes:          slices.Clone(DefaultScopes),
		prompts:         map[string]SuggestedPrompts{},
		titles:          map[string]string{},
	}
	s.cond = sync.NewCond(&s.mu)
	s.users[BotUserID] = User{ID: BotUserID, Name: "sandpiper", IsBot: true}
	t.Cleanup(s.Close)
	return s
}

// Close closes every socket and stops the server.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	conns := s.conns
	s.cond.Broadcast()
	s.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
	s.http.Close()
	s.client.CloseIdleConnections()
}

// AddUser adds or replaces a workspace member.
func (s *Server) AddUser(u User) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[u.ID] = u
}

// FailNext makes the next calls of method fail, one failure per call.
func (s *Server) FailNext(method string, f ...Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures[method] = append(s.failures[method], f...)
}

func (s *Server) nextTS() string {
	s.clock += 100
	return fmt.Sprintf("%d.%06d", s.clock/1_000_000, s.clock%1_000_000)
}

func (s *Server) nextID(prefix string) string {
	s.seq++
	return fmt.Sprintf("%s%06d", prefix, s.seq)
}

// ---- Web API ----

// routes registers the fake's endpoints: the Web API methods under /api/,
// the Socket Mode endpoint, and the URLs Slack hands out (uploads,
// downloads, response URLs).
func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ws", s.serveSocket)
	mux.HandleFunc("POST /upload/{id}", s.serveUpload)
	mux.HandleFunc("GET /files-pri/{file}/{name...}", s.serveFile)
	mux.HandleFunc("GET /signin", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html><body>Sign in to Fake</body></html>")
	})
	mux.HandleFunc("POST /response/{id}", s.serveResponseURL)

	s.method(mux, "auth.test", func(w http.ResponseWriter, _ url.Values) map[string]any {
		s.mu.Lock()
		w.Header().Set("X-OAuth-Scopes", strings.Join(s.scopes, ","))
		s.mu.Unlock()
		return map[string]any{"url": "https://fake.slack.com/", "team": "Fake", "user": "sandpiper", "team_id": TeamID, "user_id": BotUserID, "bot_id": BotID}
	})
	s.method(mux, "apps.connections.open", func(http.ResponseWriter, url.Values) map[string]any { return s.connectionsOpen() })
	for name, h := range map[string]func(url.Values) map[string]any{
		"chat.postMessage":             func(f url.Values) map[string]any { return s.postMessage(f, false) },
		"chat.postEphemeral":           func(f url.Values) map[string]any { return s.postMessage(f, true) },
		"chat.update":                  s.update,
		"chat.startStream":             s.startStream,
		"chat.appendStream":            s.appendStream,
		"chat.stopStream":              s.stopStream,
		"chat.delete":                  s.deleteMessage,
		"reactions.add":                func(f url.Values) map[string]any { return s.reaction(f, true) },
		"reactions.remove":             func(f url.Values) map[string]any { return s.reaction(f, false) },
		"conversations.replies":        s.replies,
		"users.info":                   s.userInfo,
		"conversations.info":           s.conversationInfo,
		"views.open":                   s.viewsOpen,
		"files.getUploadURLExternal":   s.getUploadURL,
		"files.completeUploadExternal": s.completeUpload,
		"files.info":                   s.fileInfo,
		"agents.sessions.setStatus":    s.setSessionStatus,
	} {
		s.method(mux, name, func(_ http.ResponseWriter, f url.Values) map[string]any { return h(f) })
	}
	s.method(mux, "assistant.threads.setStatus", func(_ http.ResponseWriter, f url.Values) map[string]any {
		s.mu.Lock()
		defer s.mu.Unlock()
		if e := s.needScopeLocked("chat:write", "assistant:write"); e != nil {
			return e
		}
		msgs, e := checkLoadingMessages(f)
		if e != nil {
			return e
		}
		s.statuses[f.Get("channel_id")+"/"+f.Get("thread_ts")] = f.Get("status")
		s.loading[f.Get("channel_id")+"/"+f.Get("thread_ts")] = msgs
		return map[string]any{}
	})
	s.method(mux, "assistant.threads.setSuggestedPrompts", func(_ http.ResponseWriter, f url.Values) map[string]any { return s.setSuggestedPrompts(f) })
	s.method(mux, "assistant.threads.setTitle", func(_ http.ResponseWriter, f url.Values) map[string]any { return s.setTitle(f) })
	// Any other method is recorded and checked like the others, then
	// refused.
	mux.Handle("POST /api/{method}", s.webAPI(func(http.ResponseWriter, url.Values) map[string]any {
		return slackErr("unknown_method")
	}))
	return mux
}

// method registers a Web API method: h gets the call's form and returns
// the response's fields ("ok" is added unless h set it).
func (s *Server) method(mux *http.ServeMux, name string, h func(http.ResponseWriter, url.Values) map[string]any) {
	mux.Handle("POST /api/"+name, s.webAPI(h))
}

// webAPI wraps a Web API method as Slack serves it: the call is recorded,
// the token checked (the app token for apps.connections.open, the bot
// token for the rest), and an injected [Failure] answered instead.
func (s *Server) webAPI(h func(http.ResponseWriter, url.Values) map[string]any) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		method := r.PathValue("method")
		if method == "" {
			method = strings.TrimPrefix(r.URL.Path, "/api/")
		}
		form := url.Values{}
		token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
			if err := r.ParseForm(); err != nil {
				writeJSON(w, 400, map[string]any{"ok": false, "error": "invalid_form_data"})
				return
			}
			form = r.PostForm
			if t := form.Get("token"); t != "" {
				token = t
			}
		} else if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			// A JSON body (views.open, for one), read as the form it
			// stands for: strings as they are, the rest as JSON.
			var body map[string]any
			if err := json.NewDecoder(r.Body).Decode(&body); err != nil && !errors.Is(err, io.EOF) {
				writeJSON(w, 200, slackErr("invalid_json"))
				return
			}
			for k, v := range body {
				if str, ok := v.(string); ok {
					form.Set(k, str)
				} else if b, err := json.Marshal(v); err == nil {
					form.Set(k, string(b))
				}
			}
		}
		call, fail := s.record(method, form)

		wantToken := BotToken
		if method == "apps.connections.open" {
			wantToken = AppToken
		}
		status, resp := 200, map[string]any(nil)
		switch {
		case token == "":
			resp = slackErr("not_authed")
		case token != wantToken:
			resp = slackErr("invalid_auth")
		case fail != nil:
			if fail.RetryAfter > 0 {
				w.Header().Set("Retry-After", strconv.Itoa(fail.RetryAfter))
			}
			status, resp = cmp.Or(fail.Status, 200), slackErr(cmp.Or(fail.Error, "ratelimited"))
		default:
			resp = h(w, form)
			if _, ok := resp["ok"]; !ok {
				resp["ok"] = true
			}
		}
		if ok, _ := resp["ok"].(bool); !ok {
			s.failed(call, fmt.Sprint(resp["error"]))
		}
		writeJSON(w, status, resp)
	})
}

// record notes a call and returns its index in s.calls and the failure
// injected for it, if any.
func (s *Server) record(method string, form url.Values) (int, *Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, Call{Method: method, Form: form, At: time.Now()})
	s.cond.Broadcast()
	i := len(s.calls) - 1
	fs := s.failures[method]
	for j := range fs {
		if fs[j].Match == "" || formContains(form, fs[j].Match) {
			f := fs[j]
			s.failures[method] = append(fs[:j:j], fs[j+1:]...)
			return i, &f
		}
	}
	return i, s.limitedLocked(method, time.Now())
}

// failed records how call i failed.
func (s *Server) failed(i int, code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[i].Error = code
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func slackErr(code string, messages ...string) map[string]any {
	r := map[string]any{"ok": false, "error": code}
	if len(messages) > 0 {
		r["response_metadata"] = map[string]any{"messages": messages}
	}
	return r
}

func (s *Server) connectionsOpen() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	ticket := s.nextID("ticket")
	s.tickets[ticket] = true
	u := strings.Replace(s.http.URL, "http://", "ws://", 1) + "/ws?ticket=" + ticket
	return map[string]any{"url": u}
}

// checkBlocks applies Slack's Block Kit limits to a blocks payload.
func checkBlocks(raw string) map[string]any {
	if raw == "" {
		return nil
	}
	var blocks []map[string]any
	if err := json.Unmarshal([]byte(raw), &blocks); err != nil {
		return slackErr("invalid_blocks_format")
	}
	if len(blocks) > 50 {
		return slackErr("invalid_blocks", "must provide an array with no more than 50 items [json-pointer:/blocks]")
	}
	total, tableChars, charts := 0, 0, 0
	for i, b := range blocks {
		switch b["type"] {
		case "section", "header":
			limit := map[any]int{"section": 3000, "header": 150}[b["type"]]
			if t, ok := b["text"].(map[string]any); ok {
				n := utf8.RuneCountInString(fmt.Sprint(t["text"]))
				total += n
				if n > limit {
					return slackErr("invalid_blocks", fmt.Sprintf("must be less than %d characters [json-pointer:/blocks/%d/text/text]", limit+1, i))
				}
			}
		case "context":
			els, _ := b["elements"].([]any)
			if len(els) > 10 {
				return slackErr("invalid_blocks", fmt.Sprintf("must provide an array with no more than 10 items [json-pointer:/blocks/%d/elements]", i))
			}
			for j, e := range els {
				m, _ := e.(map[string]any)
				n := utf8.RuneCountInString(fmt.Sprint(m["text"]))
				total += n
				if n > 3000 {
					return slackErr("invalid_blocks", fmt.Sprintf("must be less than 3001 characters [json-pointer:/blocks/%d/elements/%d/text]", i, j))
				}
			}
		case "actions":
			els, _ := b["elements"].([]any)
			if len(els) == 0 || len(els) > 25 {
				return slackErr("invalid_blocks", fmt.Sprintf("must provide an array with between 1 and 25 items [json-pointer:/blocks/%d/elements]", i))
			}
			for j, e := range els {
				if msg := checkElement(e); msg != "" {
					return slackErr("invalid_blocks", fmt.Sprintf("%s [json-pointer:/blocks/%d/elements/%d]", msg, i, j))
				}
			}
		case "divider":
		case "data_table":
			e, n := checkDataTable(i, b)
			if e != nil {
				return e
			}
			if tableChars += n; tableChars > tableMaxChars {
				return blockError("the tables of a message must hold no more than %d characters [json-pointer:/blocks/%d]", tableMaxChars, i)
			}
		case "data_visualization":
			if charts++; charts > chartsPerMessage {
				return blockError("a message holds at most %d data_visualization blocks [json-pointer:/blocks/%d]", chartsPerMessage, i)
			}
			if e := checkDataVisualization(i, b); e != nil {
				return e
			}
		case "context_actions":
			if e := checkContextActions(i, b); e != nil {
				return e
			}
		case "rich_text", "markdown":
			total += len(raw) // conservative
		default:
			return slackErr("invalid_blocks", fmt.Sprintf("unsupported type [json-pointer:/blocks/%d/type]", i))
		}
		if id, _ := b["block_id"].(string); len(id) > 255 {
			return slackErr("invalid_blocks", fmt.Sprintf("must be less than 256 characters [json-pointer:/blocks/%d/block_id]", i))
		}
	}
	if total > 12000 {
		return slackErr("msg_blocks_too_long")
	}
	return nil
}

// checkElement checks an interactive element of an actions block as
// Slack does, and returns what is wrong with it ("" when nothing).
func checkElement(e any) string {
	el, _ := e.(map[string]any)
	id, _ := el["action_id"].(string)
	if len(id) > 255 {
		return "action_id must be less than 256 characters"
	}
	switch el["type"] {
	case "button":
		t, _ := el["text"].(map[string]any)
		text, _ := t["text"].(string)
		if t["type"] != "plain_text" || text == "" || utf8.RuneCountInString(text) > 75 {
			return "button text must be plain_text of 1 to 75 characters"
		}
		if v, _ := el["value"].(string); utf8.RuneCountInString(v) > 2000 {
			return "value must be less than 2001 characters"
		}
		if st, ok := el["style"]; ok && st != "primary" && st != "danger" {
			return "style must be primary or danger"
		}
	default:
		return "unsupported element type"
	}
	return ""
}

func (s *Server) findLocked(channel, ts string) *Message {
	for _, m := range s.messages {
		if m.Channel == channel && m.TS == ts && !m.Ephemeral {
			return m
		}
	}
	return nil
}

func (s *Server) postMessage(form url.Values, ephemeral bool) map[string]any {
	channel := form.Get("channel")
	text, blocks := form.Get("text"), form.Get("blocks")
	if channel == "" {
		return slackErr("channel_not_found")
	}
	if ephemeral && form.Get("user") == "" {
		return slackErr("invalid_arguments", "missing required field: user")
	}
	if text == "" && (blocks == "" || blocks == "[]") {
		return slackErr("no_text")
	}
	if utf8.RuneCountInString(text) > 40000 {
		return slackErr("msg_too_long")
	}
	if e := checkBlocks(blocks); e != nil {
		return e
	}
	s.mu.Lock()
	if s.archived[channel] {
		s.mu.Unlock()
		return slackErr("is_archived")
	}
	m := &Message{
		Channel:     channel,
		TS:          s.nextTS(),
		ThreadTS:    form.Get("thread_ts"),
		User:        BotUserID,
		BotID:       BotID,
		Text:        text,
		Blocks:      json.RawMessage(blocks),
		Metadata:    json.RawMessage(form.Get("metadata")),
		Ephemeral:   ephemeral,
		EphemeralTo: form.Get("user"),
	}
	if m.ThreadTS != "" {
		if parent := s.findLocked(channel, m.ThreadTS); parent == nil {
			s.mu.Unlock()
			return slackErr("thread_not_found") // Slack would post unthreaded; tests want to know.
		}
	}
	s.messages = append(s.messages, m)
	s.cond.Broadcast()
	echo := s.EchoBotMessages && !ephemeral
	s.mu.Unlock()
	if ephemeral {
		return map[string]any{"message_ts": m.TS}
	}
	if echo {
		s.sendMessageEvent(m, "")
	}
	return map[string]any{"channel": channel, "ts": m.TS, "message": s.wireMessage(m, true)}
}

func (s *Server) update(form url.Values) map[string]any {
	channel, ts := form.Get("channel"), form.Get("ts")
	text, blocks := form.Get("text"), form.Get("blocks")
	if utf8.RuneCountInString(text) > 40000 {
		return slackErr("msg_too_long")
	}
	if e := checkBlocks(blocks); e != nil {
		return e
	}
	s.mu.Lock()
	m := s.findLocked(channel, ts)
	if m == nil {
		s.mu.Unlock()
		return slackErr("message_not_found")
	}
	if m.User != BotUserID {
		s.mu.Unlock()
		return slackErr("cant_update_message")
	}
	if form.Has("text") {
		m.Text = text
	}
	if form.Has("blocks") {
		m.Blocks = json.RawMessage(blocks)
	}
	if form.Has("metadata") {
		m.Metadata = json.RawMessage(form.Get("metadata"))
	}
	m.Edits++
	s.cond.Broadcast()
	echo := s.EchoBotMessages
	s.mu.Unlock()
	if echo {
		s.sendMessageEvent(m, "message_changed")
	}
	return map[string]any{"channel": channel, "ts": ts, "text": m.Text}
}

func (s *Server) reaction(form url.Values, add bool) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.findLocked(form.Get("channel"), form.Get("timestamp"))
	if m == nil {
		return slackErr("message_not_found")
	}
	name := form.Get("name")
	for i, r := range m.Reactions {
		if r == name {
			if add {
				return slackErr("already_reacted")
			}
			m.Reactions = append(m.Reactions[:i], m.Reactions[i+1:]...)
			s.cond.Broadcast()
			return map[string]any{}
		}
	}
	if !add {
		return slackErr("no_reaction")
	}
	m.Reactions = append(m.Reactions, name)
	s.cond.Broadcast()
	return map[string]any{}
}

// wireFile is a file object as Slack sends it in messages and files.info.
func (s *Server) wireFile(f *File, full bool) map[string]any {
	if !full {
		return map[string]any{"id": f.ID, "file_access": "check_file_info"}
	}
	w := map[string]any{
		"id": f.ID, "name": f.Name, "title": f.Title, "size": f.size(),
		"mimetype": f.Mimetype, "filetype": f.Filetype, "mode": f.Mode, "is_external": f.External, "user": f.User,
	}
	if f.AltTxt != "" {
		w["alt_txt"] = f.AltTxt
	}
	if f.External {
		w["url_private"] = "https://drive.example.com/file/" + f.ID
		w["external_type"] = "gdrive"
	} else if f.Mode != "tombstone" {
		u := s.http.URL + "/files-pri/" + TeamID + "-" + f.ID + "/" + url.PathEscape(f.Name)
		w["url_private"] = u
		w["url_private_download"] = u + "?download=1"
	}
	return w
}

// fillFile completes a file's Slack fields.
func fillFile(f *File) {
	if f.Title == "" {
		f.Title = f.Name
	}
	if f.Mode == "" {
		f.Mode = "hosted"
	}
	ext := strings.ToLower(strings.TrimPrefix(path.Ext(f.Name), "."))
	if f.Filetype == "" {
		f.Filetype = ext
		if ext == "" || ext == "txt" {
			f.Filetype = "text"
		}
	}
	if f.Mimetype == "" {
		f.Mimetype = mime.TypeByExtension("." + ext)
		if f.Mimetype == "" {
			f.Mimetype = "application/octet-stream"
		}
		f.Mimetype, _, _ = strings.Cut(f.Mimetype, ";")
	}
}

// serveFile serves url_private downloads to the bot token, and sends
// anyone else to the sign-in page as Slack does.
func (s *Server) serveFile(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.PathValue("file"), TeamID+"-")
	if r.Header.Get("Authorization") != "Bearer "+BotToken {
		http.Redirect(w, r, "/signin?redir="+url.QueryEscape(r.URL.Path), http.StatusFound)
		return
	}
	s.mu.Lock()
	f, ok := s.files[id]
	if ok {
		s.downloads[id]++
	}
	s.mu.Unlock()
	if !ok || f.Mode == "tombstone" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", f.Mimetype)
	w.Write(f.Data)
}

// Downloads counts the authorised downloads of a file.
func (s *Server) Downloads(fileID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.downloads[fileID]
}

// File returns a file by id.
func (s *Server) File(id string) (File, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.files[id]
	if !ok {
		return File{}, false
	}
	return *f, true
}

func (s *Server) fileInfo(form url.Values) map[string]any {
	f, ok := s.File(form.Get("file"))
	if !ok {
		return slackErr("file_not_found")
	}
	return map[string]any{"file": s.wireFile(&f, true), "comments": []any{}, "paging": map[string]any{"count": 0, "total": 0, "page": 1, "pages": 0}}
}

func (s *Server) wireMessage(m *Message, withMetadata bool) map[string]any {
	w := map[string]any{"type": "message", "ts": m.TS, "text": m.Text, "user": m.User}
	if m.ThreadTS != "" {
		w["thread_ts"] = m.ThreadTS
	}
	if m.BotID != "" {
		w["bot_id"] = m.BotID
		w["app_id"] = AppID
	}
	if len(m.Blocks) > 0 {
		w["blocks"] = m.Blocks
	}
	if withMetadata && len(m.Metadata) > 0 {
		w["metadata"] = m.Metadata
	}
	if len(m.Files) > 0 {
		var fs []map[string]any
		for i := range m.Files {
			f := &m.Files[i]
			fs = append(fs, s.wireFile(f, !f.CheckFileInfo))
		}
		w["files"] = fs
		if m.User != BotUserID {
			w["subtype"] = "file_share"
			w["upload"] = true
		}
	}
	return w
}

func (s *Server) replies(form url.Values) map[string]any {
	channel, ts := form.Get("channel"), form.Get("ts")
	limit, _ := strconv.Atoi(form.Get("limit"))
	if limit <= 0 || limit > 1000 {
		limit = 1000
	}
	start, _ := strconv.Atoi(form.Get("cursor"))
	withMeta := form.Get("include_all_metadata") == "true" || form.Get("include_all_metadata") == "1"
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.findLocked(channel, ts) == nil {
		return slackErr("thread_not_found")
	}
	var all []*Message
	for _, m := range s.messages {
		if m.Channel == channel && !m.Ephemeral && !m.Deleted && (m.TS == ts || m.ThreadTS == ts) {
			all = append(all, m)
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].TS < all[j].TS })
	var out []map[string]any
	end := min(start+limit, len(all))
	for _, m := range all[min(start, len(all)):end] {
		out = append(out, s.wireMessage(m, withMeta))
	}
	resp := map[string]any{"messages": out, "has_more": end < len(all)}
	if end < len(all) {
		resp["response_metadata"] = map[string]any{"next_cursor": strconv.Itoa(end)}
	}
	return resp
}

func (s *Server) userInfo(form url.Values) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[form.Get("user")]
	if !ok {
		return slackErr("user_not_found")
	}
	tz := u.TZ
	if tz == "" {
		tz = "America/Los_Angeles"
	}
	return map[string]any{"user": map[string]any{
		"id": u.ID, "name": u.Name, "team_id": TeamID,
		"is_admin": u.IsAdmin, "is_owner": u.IsOwner, "is_bot": u.IsBot,
		"deleted": u.Deleted, "tz": tz,
	}}
}

// ArchiveChannel archives a channel: posting there fails with
// is_archived, and conversations.info says so.
func (s *Server) ArchiveChannel(channel string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.archived[channel] = true
}

func (s *Server) conversationInfo(form url.Values) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := form.Get("channel")
	if id == "" {
		return slackErr("channel_not_found")
	}
	return map[string]any{"channel": map[string]any{
		"id": id, "is_channel": strings.HasPrefix(id, "C"), "is_im": strings.HasPrefix(id, "D"),
		"is_archived": s.archived[id],
	}}
}

func (s *Server) getUploadURL(form url.Values) map[string]any {
	n, _ := strconv.Atoi(form.Get("length"))
	if form.Get("filename") == "" || n <= 0 {
		return slackErr("invalid_arguments")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextID("F")
	s.files[id] = &File{ID: id, Name: form.Get("filename"), AltTxt: form.Get("alt_txt"), User: BotUserID}
	return map[string]any{"upload_url": s.http.URL + "/upload/" + id, "file_id": id}
}

func (s *Server) serveUpload(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	f, _, err := r.FormFile("file")
	if err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	data, err := io.ReadAll(f)
	if err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	file, ok := s.files[id]
	if !ok {
		http.NotFound(w, r)
		return
	}
	file.Data = data
	w.Write([]byte("OK - " + strconv.Itoa(len(data))))
}

func (s *Server) completeUpload(form url.Values) map[string]any {
	var files []struct{ ID, Title string }
	if err := json.Unmarshal([]byte(form.Get("files")), &files); err != nil || len(files) == 0 {
		return slackErr("invalid_arguments")
	}
	s.mu.Lock()
	m := &Message{Channel: form.Get("channel_id"), TS: s.nextTS(), ThreadTS: form.Get("thread_ts"), User: BotUserID, BotID: BotID, Text: form.Get("initial_comment")}
	var out []map[string]any
	for _, f := range files {
		file, ok := s.files[f.ID]
		if !ok || file.Data == nil {
			s.mu.Unlock()
			return slackErr("file_not_found")
		}
		file.Title = f.Title
		fillFile(file)
		m.Files = append(m.Files, *file)
		out = append(out, map[string]any{"id": f.ID, "title": f.Title})
	}
	if m.Channel != "" {
		s.messages = append(s.messages, m)
	}
	s.cond.Broadcast()
	s.mu.Unlock()
	return map[string]any{"files": out}
}

func (s *Server) serveResponseURL(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Text         string          `json:"text"`
		Blocks       json.RawMessage `json:"blocks"`
		ResponseType string          `json:"response_type"`
		ThreadTS     string          `json:"thread_ts"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	s.mu.Lock()
	ru, ok := s.responses[r.PathValue("id")]
	if !ok {
		s.mu.Unlock()
		http.NotFound(w, r)
		return
	}
	m := &Message{Channel: ru.channel, TS: s.nextTS(), User: BotUserID, BotID: BotID, Text: body.Text, Blocks: body.Blocks}
	if body.ResponseType != "in_channel" {
		m.Ephemeral, m.EphemeralTo = true, ru.user
	}
	s.messages = append(s.messages, m)
	s.calls = append(s.calls, Call{Method: "response_url", At: time.Now()})
	s.cond.Broadcast()
	s.mu.Unlock()
	writeJSON(w, 200, map[string]any{"ok": true})
}
