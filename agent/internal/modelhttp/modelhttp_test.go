package modelhttp

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sandpiper-bot/sandpiper/agent"
)

func TestErrorMessage(t *testing.T) {
	for body, want := range map[string]string{
		`{"error":{"message":"Invalid model","type":"invalid_request_error"}}`:        "Invalid model",
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`: "Overloaded",
		`{"error":"model not found"}`:                              "model not found",
		`{"message":"Unauthorized"}`:                               "Unauthorized",
		"<html><body>502 Bad Gateway</body></html>":                "",
		"upstream   connect error\nor disconnect":                  "upstream connect error or disconnect",
		`{"error":{"message":"` + strings.Repeat("x", 400) + `"}}`: strings.Repeat("x", 300) + "…",
	} {
		if got := errorMessage(body); got != want {
			t.Errorf("errorMessage(%.40q) = %q, want %q", body, got, want)
		}
	}
}

type statusErr struct{ h *HTTPError }

func (e statusErr) Error() string { return "status " + http.StatusText(e.h.Status) }

func caller(retries int) *Caller {
	return &Caller{
		Provider: "Test API", BaseURL: "https://api.example/v1", Model: "m",
		Key:    agent.APIKey{Value: "secret-key-123", Source: "TEST_KEY"},
		Policy: agent.RetryPolicy{MaxRetries: retries, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond, RequestTimeout: 200 * time.Millisecond}.WithDefaults(),
		Logger: slog.New(slog.DiscardHandler),
		HTTPErrorOf: func(err error) *HTTPError {
			var s statusErr
			if errors.As(err, &s) {
				return s.h
			}
			return nil
		},
	}
}

func TestDo(t *testing.T) {
	status := func(code int, body string) error {
		return statusErr{&HTTPError{Status: code, Body: body, Header: http.Header{}}}
	}
	for _, tt := range []struct {
		name      string
		errs      []error // per attempt; nil succeeds
		retryable bool
		noKey     bool // as for a server on loopback
		wantCalls int
		wantErr   string
	}{
		{name: "success", errs: []error{nil}, wantCalls: 1},
		{name: "409 then success", errs: []error{status(409, ""), nil}, wantCalls: 2},
		{name: "400 is final", errs: []error{status(400, `{"error":{"message":"bad tool schema"}}`)}, wantCalls: 1,
			wantErr: "model: Test API: 400 Bad Request: bad tool schema"},
		{name: "key is redacted", errs: []error{status(401, `{"error":{"message":"key secret-key-123 revoked"}}`)}, wantCalls: 1,
			wantErr: "model: Test API: 401 Unauthorized: key [redacted] revoked. The API rejected the key from TEST_KEY; check that it is current and meant for https://api.example/v1."},
		{name: "401 without a key", errs: []error{status(401, `{"error":{"message":"unauthorized"}}`)}, noKey: true, wantCalls: 1,
			wantErr: "model: Test API: 401 Unauthorized: unauthorized. No key was sent, and https://api.example/v1 wants one: set SANDPIPER_MODEL_API_KEY."},
		{name: "402", errs: []error{status(402, "")}, wantCalls: 1,
			wantErr: "model: Test API: 402 Payment Required. The account behind the key needs credits or billing details."},
		{name: "connection errors until the end", errs: []error{errors.New("connection reset by peer")}, wantCalls: 3,
			wantErr: "model: Test API: connection reset by peer (after 2 retries). Check that https://api.example/v1 is reachable and is the right base URL."},
		{name: "no retry once text went out", errs: []error{ErrStreamCut}, retryable: false, wantCalls: 1,
			wantErr: "model: Test API: the response stream ended before the response was complete. The connection was probably lost; try again."},
		{name: "a provider's own verdict is final", errs: []error{Malformed("Test API", errors.New("bad"))}, wantCalls: 1,
			wantErr: "model: Test API: malformed response: bad. Check that the base URL points at a compatible API."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := caller(2)
			if tt.noKey {
				c.Key = agent.APIKey{}
			}
			calls := 0
			err := c.Do(t.Context(), func(context.Context) error {
				e := tt.errs[min(calls, len(tt.errs)-1)]
				calls++
				return e
			}, func() bool { return tt.retryable || tt.errs[0] != ErrStreamCut })
			if calls != tt.wantCalls {
				t.Errorf("%d calls, want %d", calls, tt.wantCalls)
			}
			if tt.wantErr == "" {
				if err != nil {
					t.Errorf("err = %v", err)
				}
				return
			}
			var apiErr *agent.APIError
			if err == nil || err.Error() != tt.wantErr || !errors.As(err, &apiErr) {
				t.Fatalf("err = %v\nwant %s", err, tt.wantErr)
			}
			// Partial: retrying was refused only because text was out.
			if want := tt.errs[0] == ErrStreamCut && !tt.retryable; apiErr.Partial != want {
				t.Errorf("Partial = %v, want %v", apiErr.Partial, want)
			}
		})
	}
}

func TestDoTimeout(t *testing.T) {
	c := caller(-1)
	err := c.Do(t.Context(), func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	}, nil)
	if err == nil || err.Error() != "model: Test API: no complete response within 200ms. The API is slow or stuck; try again later." {
		t.Errorf("err = %v", err)
	}
}

// TestDoCancel runs on a synctest bubble's clock: the hour-long back-off
// would be seen to pass.
func TestDoCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := caller(5)
		c.Policy.BaseDelay, c.Policy.MaxDelay = time.Hour, time.Hour
		ctx, cancel := context.WithCancel(t.Context())
		const at = 50 * time.Millisecond
		time.AfterFunc(at, cancel)
		t0 := time.Now()
		err := c.Do(ctx, func(context.Context) error { return errors.New("refused") }, nil)
		if !errors.Is(err, context.Canceled) || time.Since(t0) != at {
			t.Errorf("err = %v after %v; want context.Canceled at the cancel, after %v", err, time.Since(t0), at)
		}
	})
}
