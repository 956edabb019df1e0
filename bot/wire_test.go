package bot_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/agent/datasource"
	"github.com/sandpiper-bot/sandpiper/agent/openai"
)

// wireModel is the language model of the end-to-end tests, faked at the
// wire: an HTTP server speaking the OpenAI chat completions API with
// server-sent events, driven by the real agent/openai provider (and so the
// real retries and error handling). For a question it writes the Python
// the script maps the last user message to (or answers at once when there
// is none); after a run it answers with what the program printed (and the
// files it wrote), so every answer comes from a real run. Failures are
// made at the wire too: HTTP error statuses, cut connections and stalled
// streams.
type wireModel struct {
	srv  *httptest.Server
	quit chan struct{} // closed when the test ends: stalled replies return

	mu     sync.Mutex
	script func(question string) (code string, ok bool)
	// queries maps a question to the runSQL call the model makes for it
	// (source, sql and name), when it is given the tool; without it, it
	// tells the user what its instructions say of the data it may not
	// query.
	queries func(question string) (args map[string]string, ok bool)
	bodies  []chatRequest
	fault   fault
	faults  int    // requests left to fail with fault; < 0 means all
	say     string // added to every answer, as a model led astray would
}

// fault is a way for the fake to fail a request.
type fault struct {
	status     int           // answer with this HTTP status and a JSON error
	retryAfter time.Duration // with status, sent as Retry-After-Ms
	cut        bool          // send part of a tool call, then drop the connection
	short      bool          // send part of a tool call, then end the stream
	stall      bool          // send the first chunk, then nothing until the client goes
	loop       bool          // after a run, never answer: run more code
}

// The provider's key, and the retry policy of the tests: the real retry
// path, with back-offs short enough to keep the tests fast.
const wireKey = "sk-wire-test-0123456789"

var testRetry = agent.RetryPolicy{MaxRetries: 2, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond, RequestTimeout: 15 * time.Second}

// chatRequest is the part of a chat completions request the fake reads.
type chatRequest struct {
	at            time.Time // when it arrived
	Model         string    `json:"model"`
	Stream        bool      `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Type     string `json:"type"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		} `json:"function"`
	} `json:"tools"`
}

// contentText returns a message's content as text (a string, or text parts).
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// transcript is the conversation of a request, one line a message, with
// the tool calls' arguments and the tool results indented.
func (r chatRequest) transcript() string {
	var b strings.Builder
	for _, m := range r.Messages {
		if m.Role == "tool" {
			b.WriteString("  result " + contentText(m.Content) + "\n")
			continue
		}
		b.WriteString(m.Role + ": " + contentText(m.Content) + "\n")
		for _, c := range m.ToolCalls {
			b.WriteString("  call " + c.Function.Arguments + "\n")
		}
	}
	return b.String()
}

func newWireModel(t *testing.T, script func(string) (string, bool)) *wireModel {
	m := &wireModel{script: script, quit: make(chan struct{})}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(func() {
		close(m.quit)
		m.srv.Close()
	})
	return m
}

// model returns the real provider pointed at the fake.
func (m *wireModel) model(t *testing.T, retry agent.RetryPolicy) agent.Model {
	t.Helper()
	p, err := openai.New(openai.Config{
		BaseURL: m.srv.URL + "/v1",
		Key:     agent.APIKey{Value: wireKey, Source: "TEST_API_KEY"},
		Model:   "fake/wire",
		Retry:   retry,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// setScript replaces the programs the model writes.
func (m *wireModel) setScript(script func(string) (string, bool)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.script = script
}

// setQueries sets the queries the model makes.
func (m *wireModel) setQueries(queries func(string) (map[string]string, bool)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.queries = queries
}

// system returns the request's instructions.
func (r chatRequest) system() string {
	for _, m := range r.Messages {
		if m.Role == "system" || m.Role == "developer" {
			return contentText(m.Content)
		}
	}
	return ""
}

// hasTool reports whether the request offers the tool.
func (r chatRequest) hasTool(name string) bool {
	for _, t := range r.Tools {
		if t.Function.Name == name {
			return true
		}
	}
	return false
}

// lastCall returns the name of the tool the model called last.
func (r chatRequest) lastCall() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if c := r.Messages[i].ToolCalls; len(c) > 0 {
			return c[len(c)-1].Function.Name
		}
	}
	return ""
}

// reGrant finds the command its instructions tell the model to pass on.
var reGrant = regexp.MustCompile("`@sandpiper sources allow [a-z0-9_]+`")

// queryAnswer is the model's answer from a runSQL result: the rows it
// read, or the database's error.
func queryAnswer(content string) string {
	var res struct {
		Source  string      `json:"source"`
		Error   string      `json:"error"`
		Rows    int64       `json:"rows"`
		Preview [][]*string `json:"preview"`
		File    string      `json:"file"`
	}
	if err := json.Unmarshal([]byte(content), &res); err != nil {
		return "The query did not run: " + content
	}
	if res.Error != "" {
		return "The query failed: " + res.Error
	}
	var rows []string
	for _, r := range res.Preview {
		var cells []string
		for _, c := range r {
			if c == nil {
				cells = append(cells, "NULL")
				continue
			}
			cells = append(cells, *c)
		}
		rows = append(rows, strings.Join(cells, " "))
	}
	return fmt.Sprintf("From %s: **%s** (all rows are in `%s`).", res.Source, strings.Join(rows, "; "), res.File)
}

// fail makes the next n requests fail with f; n < 0 makes all of them
// fail, until heal.
func (m *wireModel) fail(n int, f fault) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fault, m.faults = f, n
}

// setSay makes the model add s to every answer it gives.
func (m *wireModel) setSay(s string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.say = s
}

// heal makes the model behave normally from now on.
func (m *wireModel) heal() { m.fail(0, fault{}) }

// requests returns the requests the fake received, failed ones included.
func (m *wireModel) requests() []chatRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]chatRequest(nil), m.bodies...)
}

// lastUser returns the text of the last user message of a request.
func (r chatRequest) lastUser() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return contentText(r.Messages[i].Content)
		}
	}
	return ""
}

func apiError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}})
	w.Write(b)
}

func (m *wireModel) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		apiError(w, http.StatusNotFound, "invalid_request_error", "no such endpoint: "+r.Method+" "+r.URL.Path)
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+wireKey {
		apiError(w, http.StatusUnauthorized, "invalid_request_error", "Incorrect API key provided.")
		return
	}
	body, _ := io.ReadAll(r.Body)
	req := chatRequest{at: time.Now()}
	if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) == 0 || !req.Stream {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "the fake only streams, and needs messages")
		return
	}
	m.mu.Lock()
	m.bodies = append(m.bodies, req)
	n := len(m.bodies)
	script, queries, f, say := m.script, m.queries, fault{}, m.say
	if m.faults != 0 {
		f = m.fault
		if m.faults > 0 {
			m.faults--
		}
	}
	m.mu.Unlock()

	switch {
	case f.status == http.StatusUnauthorized:
		// As OpenAI does, naming (part of) the key it was given.
		apiError(w, f.status, "invalid_request_error", "Incorrect API key provided: "+wireKey+". You can find your API key at https://platform.openai.com/account/api-keys.")
		return
	case f.status != 0:
		if f.retryAfter > 0 {
			w.Header().Set("Retry-After-Ms", strconv.FormatInt(f.retryAfter.Milliseconds(), 10))
		}
		apiError(w, f.status, "server_error", "The server is overloaded; please retry.")
		return
	}

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	send := func(delta map[string]any, finish any) {
		b, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("chatcmpl-wire%d", n), "object": "chat.completion.chunk", "created": 1767225600, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
		fmt.Fprintf(w, "data: %s\n\n", b)
		w.(http.Flusher).Flush()
	}
	answer := func(s string) {
		s += say
		send(map[string]any{"role": "assistant", "content": ""}, nil)
		// Two chunks, as a streaming model would send them.
		half := len(s) / 2
		for half > 0 && !isRuneStart(s[half]) {
			half--
		}
		send(map[string]any{"content": s[:half]}, nil)
		send(map[string]any{"content": s[half:]}, nil)
		send(map[string]any{}, "stop")
	}
	callTool := func(name string, input map[string]string) {
		args, _ := json.Marshal(input)
		send(map[string]any{"role": "assistant", "content": nil}, nil)
		send(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": fmt.Sprintf("call_w%d", n), "type": "function",
			"function": map[string]any{"name": name, "arguments": ""}}}}, nil)
		if f.cut {
			// Half the arguments, then the connection drops.
			send(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": string(args[:len(args)/2])}}}}, nil)
			panic(http.ErrAbortHandler)
		}
		if f.short {
			// Half the arguments, then the response ends: no finish
			// reason, no [DONE].
			send(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": string(args[:len(args)/2])}}}}, nil)
			return
		}
		send(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": string(args)}}}}, nil)
		send(map[string]any{}, "tool_calls")
	}
	call := func(code string) { callTool(agent.ExecuteCodeName, map[string]string{"code": code}) }
	if f.stall {
		send(map[string]any{"role": "assistant", "content": ""}, nil)
		select {
		case <-r.Context().Done():
		case <-m.quit:
		}
		return
	}

	last := req.Messages[len(req.Messages)-1]
	switch last.Role {
	case "user":
		if queries != nil {
			if args, ok := queries(contentText(last.Content)); ok {
				switch {
				case req.hasTool(datasource.QueryToolName):
					callTool(datasource.QueryToolName, args)
				case reGrant.MatchString(req.system()):
					answer("I can't read that data in this conversation. An admin can allow it: " + reGrant.FindString(req.system()) + ".")
				default:
					answer("I have no database to answer that from.")
				}
				break
			}
		}
		code, ok := script(contentText(last.Content))
		if !ok && !f.cut && !f.short {
			answer("I can answer that without code: **hello**.")
			break
		}
		call(code)
	case "tool":
		if req.lastCall() == datasource.QueryToolName {
			answer(queryAnswer(contentText(last.Content)))
			break
		}
		if f.loop || f.cut || f.short {
			call("print('again')")
			break
		}
		var res struct {
			Output   string   `json:"output"`
			Stderr   string   `json:"stderr"`
			ExitCode int      `json:"exitCode"`
			Files    []string `json:"files"`
		}
		json.Unmarshal([]byte(contentText(last.Content)), &res)
		switch {
		case res.ExitCode != 0:
			lines := strings.Split(strings.TrimSpace(res.Stderr), "\n")
			answer("The program failed: `" + lines[len(lines)-1] + "`")
		case len(res.Files) > 0:
			answer("The result is **" + strings.TrimSpace(truncateForAnswer(res.Output)) + "**. I saved " + strings.Join(res.Files, ", ") + ".")
		default:
			answer("The result is **" + strings.TrimSpace(truncateForAnswer(res.Output)) + "**.")
		}
	default:
		apiError(w, http.StatusBadRequest, "invalid_request_error", "the last message is from "+last.Role)
		return
	}
	if req.StreamOptions.IncludeUsage {
		b, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("chatcmpl-wire%d", n), "object": "chat.completion.chunk", "created": 1767225600, "model": req.Model,
			"choices": []any{}, "usage": map[string]any{"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}})
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	io.WriteString(w, "data: [DONE]\n\n")
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

func truncateForAnswer(s string) string {
	if len(s) > 200 {
		return s[:200]
	}
	return s
}
