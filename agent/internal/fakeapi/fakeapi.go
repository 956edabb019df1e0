// Package fakeapi is an HTTP server for provider tests: it records every
// request and answers with scripted replies, in order, as a model API
// would (JSON errors, server-sent event streams, cut connections).
package fakeapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// Request is a recorded request.
type Request struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

// Server answers the i-th request with the i-th reply; past the end it
// repeats the last one.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	requests []Request
	replies  []http.HandlerFunc
}

// New starts a server closed at the end of the test.
func New(t testing.TB, replies ...http.HandlerFunc) *Server {
	s := &Server{replies: replies}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	i := min(len(s.requests), len(s.replies)) - 1
	s.mu.Unlock()
	if i < 0 {
		http.Error(w, "no reply scripted", http.StatusTeapot)
		return
	}
	s.replies[i](w, r)
}

// Requests returns the requests so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Status replies with a status, headers as key/value pairs, and a JSON body.
func Status(code int, body string, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

// SSE replies 200 with an event stream of the given events, each written
// and flushed as is (so an event is "data: {...}\n\n" or
// "event: x\ndata: {...}\n\n").
func SSE(events ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, e := range events {
			io.WriteString(w, e)
			w.(http.Flusher).Flush()
		}
	}
}

// CutSSE writes the events, then drops the connection mid-response.
func CutSSE(events ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		SSE(events...)(w, r)
		panic(http.ErrAbortHandler)
	}
}

// Data formats one "data:" event of a JSON value.
func Data(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return "data: " + string(b) + "\n\n"
}

// Event formats a named event of a JSON value.
func Event(name string, v any) string {
	return "event: " + name + "\n" + Data(v)
}

// JSONEqual fails the test unless got and want hold the same JSON value.
func JSONEqual(t testing.TB, what string, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %v in %s", what, err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: bad want: %v", what, err)
	}
	if !reflect.DeepEqual(g, w) {
		gi, _ := json.MarshalIndent(g, "", "  ")
		wi, _ := json.MarshalIndent(w, "", "  ")
		t.Errorf("%s:\n%s\nwant:\n%s", what, gi, wi)
	}
}

// Pretty indents JSON for messages.
func Pretty(b []byte) string {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return string(b)
	}
	out, _ := json.MarshalIndent(v, "", "  ")
	return strings.TrimSpace(fmt.Sprint(string(out)))
}
