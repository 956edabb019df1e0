package fakeapi

import (
	"cmp"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// question is what RoundTrip asks; runner's program answers it.
const question = "What is 5 + 5 minus 84 cubed?"

// runner is a sandbox whose every run prints what print(5 + 5 - 84**3)
// prints; it records the code.
type runner struct{ codes []string }

func (r *runner) Run(_ context.Context, req sandbox.Request) (*sandbox.Result, error) {
	r.codes = append(r.codes, req.Code)
	return &sandbox.Result{Stdout: []byte("-592694\n"), StdoutSize: 8}, nil
}

// Info says the fake keeps state and sets the default limits.
func (r *runner) Info() sandbox.Info {
	return sandbox.Info{Backend: "fake", Limits: sandbox.Limits{}.WithDefaults(), KeepsState: true}
}

// RoundTrip asks model the question of the issue through the agent loop,
// with an executeCode tool on a sandbox that prints -592694, and checks
// what every provider's fake must give: the model calls the tool with
// print(5 + 5 - 84**3), streaming "Let me compute.", then answers
// "5 + 5 − 84³ = **-592694**" in two pieces, using 250 tokens in and 29
// out. It returns the tool, whose spec the requests should carry, and the
// conversation: the question, then the run's messages.
func RoundTrip(t *testing.T, model agent.Model) (agent.Tool, []agent.Message) {
	t.Helper()
	run := &runner{}
	tool := agent.NewExecuteCode(run, agent.ExecuteCodeOptions{Runtime: agent.Runtime{Python: "3.13.1"}})
	a := &agent.Agent{Model: model, Tools: []agent.Tool{tool}}
	var deltas []string
	obs := agent.ObserverFuncs{OnAnswerDelta: func(e agent.DeltaEvent) { deltas = append(deltas, e.Text) }}
	history := []agent.Message{agent.UserMessage(question)}
	out, err := a.Run(t.Context(), history, agent.RunOptions{Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	if out.Answer != "5 + 5 − 84³ = **-592694**" || out.Stop != agent.StopAnswered || out.Steps != 2 {
		t.Errorf("outcome = %+v", out)
	}
	if out.Usage != (agent.Usage{InputTokens: 250, OutputTokens: 29}) {
		t.Errorf("usage = %+v", out.Usage)
	}
	if got, want := strings.Join(deltas, "|"), "Let me compute.|5 + 5 − 84³ = |**-592694**"; got != want {
		t.Errorf("deltas = %q, want %q", got, want)
	}
	if len(run.codes) != 1 || run.codes[0] != "print(5 + 5 - 84**3)" {
		t.Errorf("ran %q", run.codes)
	}
	return tool, append(history, out.Messages...)
}

// ErrorCase is a case of a provider's error test: the fake API's replies,
// and what Generate must return.
type ErrorCase struct {
	Name      string
	Replies   []http.HandlerFunc
	Key       agent.APIKey  // the provider's key (default: the test's)
	WantErr   string        // substring of the error; "": the answer RoundTrip's fakes give
	WantNot   string        // must not appear in the error
	WantReqs  int           // requests made, retries included
	WantCode  int           // the status of the *agent.APIError
	WantDelay time.Duration // at least this long, retries included
}

// TestErrors runs each case against a fake API serving its replies, with
// the provider newModel makes for the fake and the case's key (or key).
func TestErrors(t *testing.T, cases []ErrorCase, key agent.APIKey, newModel func(t *testing.T, srv *Server, key agent.APIKey) agent.Model) {
	for _, tt := range cases {
		t.Run(tt.Name, func(t *testing.T) {
			srv := New(t, tt.Replies...)
			m := newModel(t, srv, cmp.Or(tt.Key, key))
			t0 := time.Now()
			resp, err := m.Generate(t.Context(), &agent.Request{Messages: []agent.Message{agent.UserMessage("q")}}, func(string) {})
			elapsed := time.Since(t0)
			if n := len(srv.Requests()); n != tt.WantReqs {
				t.Errorf("%d requests, want %d", n, tt.WantReqs)
			}
			if tt.WantErr == "" {
				if err != nil {
					t.Fatalf("Generate: %v", err)
				}
				if resp.Message.Text != "5 + 5 − 84³ = **-592694**" || resp.Finish != agent.FinishStop {
					t.Errorf("response = %+v", resp)
				}
				if elapsed < tt.WantDelay {
					t.Errorf("retried after %v, want at least %v", elapsed, tt.WantDelay)
				}
				return
			}
			if err == nil {
				t.Fatalf("Generate succeeded: %+v", resp)
			}
			t.Logf("error: %v", err)
			if !strings.Contains(err.Error(), tt.WantErr) {
				t.Errorf("error:\n%v\nwant it to contain\n%s", err, tt.WantErr)
			}
			if tt.WantNot != "" && strings.Contains(err.Error(), tt.WantNot) {
				t.Errorf("error %q contains %q", err, tt.WantNot)
			}
			if apiErr, ok := errors.AsType[*agent.APIError](err); !ok || apiErr.StatusCode != tt.WantCode {
				t.Errorf("error %#v: want an *agent.APIError with status %d", err, tt.WantCode)
			}
		})
	}
}

// DeltasWhileStreaming checks that a provider hands the agent's observer
// each piece of text while the model is still streaming, not after the
// turn: the fake API sends the events in head (which must hold text),
// then holds the rest of the stream back until the observer has seen a
// delta (or 10s pass), then sends tail. The test fails if the first delta
// arrived only after the hold was given up. Ordering, not timing, decides.
func DeltasWhileStreaming(t *testing.T, head, tail []string, newModel func(t *testing.T, srv *Server) agent.Model) {
	t.Helper()
	seen := make(chan struct{})
	released := make(chan string, 1) // how the hold ended
	hold := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, e := range head {
			io.WriteString(w, e)
		}
		w.(http.Flusher).Flush()
		select {
		case <-seen:
			released <- "delta"
		case <-time.After(10 * time.Second):
			released <- "timeout"
		case <-r.Context().Done():
			return
		}
		for _, e := range tail {
			io.WriteString(w, e)
		}
		w.(http.Flusher).Flush()
	}
	srv := New(t, hold)
	var deltas []string
	obs := agent.ObserverFuncs{OnAnswerDelta: func(e agent.DeltaEvent) {
		if len(deltas) == 0 {
			close(seen)
		}
		deltas = append(deltas, e.Text)
	}}
	a := &agent.Agent{Model: newModel(t, srv)}
	out, err := a.Run(t.Context(), []agent.Message{agent.UserMessage(question)}, agent.RunOptions{Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	if how := <-released; how != "delta" {
		t.Errorf("the first delta reached the observer only after the stream ended (hold ended by %s)", how)
	}
	if strings.Join(deltas, "") != out.Answer || len(deltas) < 2 {
		t.Errorf("deltas %q, answer %q", deltas, out.Answer)
	}
}
