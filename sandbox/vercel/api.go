package vercel

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sandpiper-bot/sandpiper/sandbox/httpretry"
	"github.com/sandpiper-bot/sandpiper/sandbox/internal/remote"
)

// client speaks the Sandbox REST API v1, the API of @vercel/sandbox 1.x.
type client struct {
	base  string // API base URL, without a trailing slash
	creds credentials
	http  *http.Client
	log   *slog.Logger
	// retryBase is the first back-off delay; each retry waits about
	// retryFactor times longer, with jitter.
	retryBase time.Duration
}

// apiSandbox is the API's sandbox object (the fields this package reads).
type apiSandbox struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Runtime string `json:"runtime"`
	Cwd     string `json:"cwd"`
	Memory  int64  `json:"memory"`
	VCPUs   int    `json:"vcpus"`
	Region  string `json:"region"`
	Timeout int64  `json:"timeout"`
}

// apiCommand is the API's command object.
type apiCommand struct {
	ID        string   `json:"id"`
	Name      string   `json:"name"`
	Args      []string `json:"args"`
	Cwd       string   `json:"cwd"`
	SandboxID string   `json:"sandboxId"`
	ExitCode  *int     `json:"exitCode"` // null while the command runs
	StartedAt int64    `json:"startedAt"`
}

// createRequest is the body of POST /v1/sandboxes.
type createRequest struct {
	ProjectID     string         `json:"projectId"`
	Ports         []int          `json:"ports"`
	Timeout       int64          `json:"timeout"` // ms
	Resources     resources      `json:"resources"`
	Runtime       string         `json:"runtime"`
	NetworkPolicy *networkPolicy `json:"networkPolicy,omitempty"`
}

type resources struct {
	VCPUs int `json:"vcpus"`
}

type networkPolicy struct {
	Mode string `json:"mode"` // allow-all, deny-all or custom
}

// commandRequest is the body of POST /v1/sandboxes/{id}/cmd.
type commandRequest struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Cwd     string            `json:"cwd,omitempty"`
	Env     map[string]string `json:"env"`
	Sudo    bool              `json:"sudo"`
	Wait    bool              `json:"wait,omitempty"`
}

// logLine is one line of a command's NDJSON log stream.
type logLine struct {
	Stream string          `json:"stream"` // stdout, stderr or error
	Data   json.RawMessage `json:"data"`   // a string, or {code, message} for error
}

// APIError is a response from the API with a status other than 2xx.
type APIError struct {
	Op         string // what was asked: "create sandbox", "run command", ...
	StatusCode int
	Code       string // the API's error code, when the body has one
	Message    string // the API's message, when the body has one
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("vercel: %s: HTTP %d", e.Op, e.StatusCode)
	if e.Code != "" {
		s += " " + e.Code
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// newAPIError reads what it can of a failed response. Vercel errors look
// like {"error": {"code": "...", "message": "..."}}.
func newAPIError(op string, resp *http.Response) *APIError {
	e := &APIError{Op: op, StatusCode: resp.StatusCode}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var v struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &v) == nil {
		e.Code, e.Message = v.Error.Code, v.Error.Message
	}
	if e.Message == "" && e.Code == "" {
		if t := strings.TrimSpace(string(body)); t != "" && !strings.HasPrefix(t, "<") {
			e.Message = clip(t, 200)
		}
	}
	return e
}

// request is one API call. The body is built by body() on every attempt.
type request struct {
	op          string
	method      string
	path        string
	query       url.Values
	contentType string
	header      http.Header
	body        []byte
}

// do sends r, retrying network errors, 429 and 5xx with back-off and
// honouring Retry-After, and returns a 2xx response whose body the caller
// must close. A retry happens only before any of a response is used, so a
// streamed body is never replayed.
func (c *client) do(ctx context.Context, r request) (*http.Response, error) {
	q := url.Values{}
	for k, v := range r.query {
		q[k] = v
	}
	q.Set("teamId", c.creds.teamID)
	u := c.base + r.path + "?" + q.Encode()
	ctype := r.contentType
	if ctype == "" {
		ctype = "application/json"
	}
	var lastErr error
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			c.log.DebugContext(ctx, "vercel: retrying", "op", r.op, "attempt", attempt+1, "err", lastErr)
		}
		req, err := http.NewRequestWithContext(ctx, r.method, u, bytes.NewReader(r.body))
		if err != nil {
			return nil, fmt.Errorf("vercel: %s: %w", r.op, err)
		}
		for k, v := range r.header {
			req.Header[k] = v
		}
		req.Header.Set("Authorization", "Bearer "+c.creds.token)
		req.Header.Set("Content-Type", ctype)
		req.Header.Set("User-Agent", userAgent)
		start := time.Now()
		resp, err := c.http.Do(req)
		var wait time.Duration
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return nil, fmt.Errorf("vercel: %s: %w", r.op, context.Cause(ctx))
			}
			lastErr = fmt.Errorf("vercel: %s: %w", r.op, redactURL(err))
			wait = httpretry.Backoff(attempt, c.retryBase, maxBackoff, retryFactor)
		case resp.StatusCode >= 200 && resp.StatusCode < 300:
			c.log.DebugContext(ctx, "vercel: api", "op", r.op, "status", resp.StatusCode, "took", time.Since(start).Round(time.Millisecond))
			return resp, nil
		case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
			apiErr := newAPIError(r.op, resp)
			resp.Body.Close()
			lastErr = apiErr
			wait = httpretry.Backoff(attempt, c.retryBase, maxBackoff, retryFactor)
			if ra, ok := httpretry.RetryAfter(resp.Header, time.Now()); ok {
				if ra > maxRetryAfter {
					return nil, fmt.Errorf("%w (the API asks to wait %s; giving up)", apiErr, ra.Round(time.Second))
				}
				wait = ra
			}
		default:
			apiErr := newAPIError(r.op, resp)
			resp.Body.Close()
			return nil, c.explain(apiErr)
		}
		if attempt+1 >= maxAttempts {
			return nil, fmt.Errorf("%w (after %d attempts)", lastErr, maxAttempts)
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("vercel: %s: %w (while waiting to retry after: %v)", r.op, context.Cause(ctx), lastErr)
		}
	}
}

// explain adds what to do to the errors a user can fix.
func (c *client) explain(e *APIError) error {
	switch e.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		if c.creds.oidc {
			if !c.creds.expires.IsZero() && time.Now().After(c.creds.expires) {
				return fmt.Errorf("%w: %s", e, expiredAdvice(c.creds.expires))
			}
			return fmt.Errorf("%w (check that VERCEL_OIDC_TOKEN belongs to a project with Vercel Sandbox; run `vercel env pull` to get a fresh one)", e)
		}
		return fmt.Errorf("%w (check VERCEL_TOKEN, and that it can reach team VERCEL_TEAM_ID=%s and project VERCEL_PROJECT_ID=%s)", e, c.creds.teamID, c.creds.projectID)
	case http.StatusNotFound:
		if e.Op == "check credentials" {
			return fmt.Errorf("%w (check the team %s and project %s, and SANDPIPER_VERCEL_API_URL)", e, c.creds.teamID, c.creds.projectID)
		}
	}
	return e
}

// redactURL drops the URL from a transport error: it holds nothing secret,
// but it is long and says nothing the op does not.
func redactURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func (c *client) doJSON(ctx context.Context, r request, in, out any) error {
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("vercel: %s: %w", r.op, err)
		}
		r.body = b
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	resp, err := c.do(ctx, r)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxJSONBody)).Decode(out); err != nil {
		return fmt.Errorf("vercel: %s: unexpected response: %w", r.op, err)
	}
	return nil
}

// checkCredentials lists at most one sandbox of the project: it proves the
// token, team and project without creating anything.
func (c *client) checkCredentials(ctx context.Context) error {
	var out struct {
		Sandboxes []apiSandbox `json:"sandboxes"`
	}
	return c.doJSON(ctx, request{op: "check credentials", method: http.MethodGet, path: "/v1/sandboxes",
		query: url.Values{"project": {c.creds.projectID}, "limit": {"1"}}}, nil, &out)
}

func (c *client) create(ctx context.Context, body createRequest) (*apiSandbox, error) {
	body.ProjectID = c.creds.projectID
	var out struct {
		Sandbox apiSandbox `json:"sandbox"`
	}
	if err := c.doJSON(ctx, request{op: "create sandbox", method: http.MethodPost, path: "/v1/sandboxes"}, body, &out); err != nil {
		return nil, err
	}
	if out.Sandbox.ID == "" {
		return nil, errors.New("vercel: create sandbox: the response has no sandbox id")
	}
	return &out.Sandbox, nil
}

func (c *client) stop(ctx context.Context, id string) error {
	return c.doJSON(ctx, request{op: "stop sandbox", method: http.MethodPost, path: "/v1/sandboxes/" + url.PathEscape(id) + "/stop"}, nil, nil)
}

// writeFiles extracts a gzipped tar into the sandbox, at dir.
func (c *client) writeFiles(ctx context.Context, id, dir string, tgz []byte) error {
	return c.doJSON(ctx, request{op: "write files", method: http.MethodPost, path: "/v1/sandboxes/" + url.PathEscape(id) + "/fs/write",
		contentType: "application/gzip", header: http.Header{"X-Cwd": {dir}}, body: tgz}, nil, nil)
}

// readFile's errors, as remote.Files wants them.
var (
	errNotFound = remote.ErrNotFound // no such file
	errTooBig   = remote.ErrTooBig
)

// readFile returns the file at path, failing when it holds more than max bytes.
func (c *client) readFile(ctx context.Context, id, path string, max int64) ([]byte, error) {
	body, _ := json.Marshal(map[string]string{"path": path, "cwd": "/"})
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	resp, err := c.do(ctx, request{op: "read file", method: http.MethodPost, path: "/v1/sandboxes/" + url.PathEscape(id) + "/fs/read", body: body})
	var ae *APIError
	if errors.As(err, &ae) && ae.StatusCode == http.StatusNotFound {
		return nil, errNotFound
	}
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, fmt.Errorf("vercel: read file: %w", err)
	}
	if int64(len(data)) > max {
		return nil, errTooBig
	}
	return data, nil
}

// startCommand runs a command with wait set and returns the command, as
// the first NDJSON line announces it, and the stream that will carry its
// end. The caller must close the stream.
func (c *client) startCommand(ctx context.Context, id string, body commandRequest) (*apiCommand, *commandStream, error) {
	body.Wait = true
	b, err := json.Marshal(body)
	if err != nil {
		return nil, nil, fmt.Errorf("vercel: run command: %w", err)
	}
	resp, err := c.do(ctx, request{op: "run command", method: http.MethodPost, path: "/v1/sandboxes/" + url.PathEscape(id) + "/cmd", body: b})
	if err != nil {
		return nil, nil, err
	}
	s := &commandStream{body: resp.Body, dec: json.NewDecoder(bufio.NewReader(resp.Body))}
	cmd, err := s.next()
	if err != nil {
		resp.Body.Close()
		return nil, nil, fmt.Errorf("vercel: run command: %w", err)
	}
	if cmd.ID == "" {
		resp.Body.Close()
		return nil, nil, errors.New("vercel: run command: the response has no command id")
	}
	return cmd, s, nil
}

// commandStream is the NDJSON answer of a command run with wait: one
// {command} line when it starts and one when it ends.
type commandStream struct {
	body io.ReadCloser
	dec  *json.Decoder
}

func (s *commandStream) next() (*apiCommand, error) {
	var v struct {
		Command *apiCommand `json:"command"`
	}
	if err := s.dec.Decode(&v); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	if v.Command == nil {
		return nil, errors.New("unexpected line in the command stream")
	}
	return v.Command, nil
}

// wait returns the command's exit code, from its last line.
func (s *commandStream) wait() (int, error) {
	for {
		cmd, err := s.next()
		if err != nil {
			return 0, fmt.Errorf("vercel: wait for command: %w", err)
		}
		if cmd.ExitCode != nil {
			return *cmd.ExitCode, nil
		}
	}
}

func (s *commandStream) Close() error { return s.body.Close() }

// streamLogs copies a command's output to stdout and stderr as it arrives,
// until the command ends or ctx is done.
func (c *client) streamLogs(ctx context.Context, id, cmdID string, stdout, stderr io.Writer) error {
	resp, err := c.do(ctx, request{op: "read logs", method: http.MethodGet, path: "/v1/sandboxes/" + url.PathEscape(id) + "/cmd/" + url.PathEscape(cmdID) + "/logs"})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(bufio.NewReader(resp.Body))
	for {
		var l logLine
		if err := dec.Decode(&l); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			return fmt.Errorf("vercel: read logs: %w", err)
		}
		switch l.Stream {
		case "stdout", "stderr":
			var s string
			if err := json.Unmarshal(l.Data, &s); err != nil {
				return fmt.Errorf("vercel: read logs: %w", err)
			}
			w := stdout
			if l.Stream == "stderr" {
				w = stderr
			}
			io.WriteString(w, s)
		case "error":
			var e struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			}
			json.Unmarshal(l.Data, &e)
			return fmt.Errorf("vercel: read logs: %s: %s", e.Code, e.Message)
		}
	}
}

// kill sends signal to a running command. @vercel/sandbox 1.x posts to
// /v1/sandboxes/{id}/{cmdId}/kill; the documented path has /cmd/ in it, so
// that one is tried first.
func (c *client) kill(ctx context.Context, id, cmdID string, signal int) error {
	body := map[string]int{"signal": signal}
	err := c.doJSON(ctx, request{op: "kill command", method: http.MethodPost,
		path: "/v1/sandboxes/" + url.PathEscape(id) + "/cmd/" + url.PathEscape(cmdID) + "/kill"}, body, nil)
	var ae *APIError
	if errors.As(err, &ae) && ae.StatusCode == http.StatusNotFound {
		err = c.doJSON(ctx, request{op: "kill command", method: http.MethodPost,
			path: "/v1/sandboxes/" + url.PathEscape(id) + "/" + url.PathEscape(cmdID) + "/kill"}, body, nil)
	}
	return err
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
