package vercel

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// newTestSandbox returns a backend talking to f, with fast retries and no
// /mnt/data link (the fake runs commands on this host).
func newTestSandbox(t testing.TB, f *fakeVercel, cfg Config) (*Sandbox, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	cfg.APIURL = f.srv.URL
	if cfg.Token == "" && cfg.OIDCToken == "" {
		cfg.Token, cfg.TeamID, cfg.ProjectID = fakeToken, fakeTeam, fakeProject
	}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	s.api.retryBase = time.Millisecond
	s.workAlias = ""
	t.Cleanup(func() {
		s.Close()
		if strings.Contains(logs.String(), fakeToken) {
			t.Errorf("the token is in the logs:\n%s", logs.String())
		}
	})
	return s, logs
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// assertStopped checks that every sandbox created was stopped exactly once.
func assertStopped(t *testing.T, f *fakeVercel, wantCreated int) {
	t.Helper()
	created, stops := f.stopCounts()
	if created != wantCreated {
		t.Errorf("%d sandboxes created, want %d", created, wantCreated)
	}
	for id, n := range stops {
		if n != 1 {
			t.Errorf("sandbox %s stopped %d times, want 1", id, n)
		}
	}
}

func TestRunFull(t *testing.T) {
	f := newFake(t)
	s, _ := newTestSandbox(t, f, Config{})
	res, err := s.Run(t.Context(), sandbox.Request{Code: "import sys, os\nprint(6 * 7)\nprint(os.getcwd().endswith('/vercel/sandbox/data'))\nprint('warn', file=sys.stderr)"})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if string(res.Stdout) != "42\nTrue\n" || string(res.Stderr) != "warn\n" || res.ExitCode != 0 || res.Limit != sandbox.LimitNone {
		t.Errorf("result: stdout %q stderr %q exit %d limit %q", res.Stdout, res.Stderr, res.ExitCode, res.Limit)
	}
	if res.StdoutSize != 8 || res.Truncated() || len(res.Files) != 0 || res.Duration <= 0 {
		t.Errorf("result: %+v", res)
	}
	if got, want := f.ops(), []string{"list", "create", "cmd", "logs", "cmd", "logs", "stop"}; !slices.Equal(got, want) {
		t.Errorf("calls %v, want %v", got, want)
	}
	f.mu.Lock()
	reqs := slices.Clone(f.reqs)
	f.mu.Unlock()
	for _, r := range reqs {
		if r.Auth != "Bearer "+fakeToken || r.TeamID != fakeTeam {
			t.Errorf("%s %s: auth %q teamId %q", r.Method, r.Path, r.Auth, r.TeamID)
		}
	}
	var create map[string]any
	json.Unmarshal(f.requests("create")[0].Body, &create)
	wantCreate := map[string]any{
		"projectId":     fakeProject,
		"runtime":       "python3.13",
		"ports":         []any{},
		"timeout":       float64((sandbox.DefaultTimeout + lifetimeSlack).Milliseconds()),
		"resources":     map[string]any{"vcpus": float64(1)},
		"networkPolicy": map[string]any{"mode": "deny-all"},
	}
	if fmt.Sprint(create) != fmt.Sprint(wantCreate) {
		t.Errorf("create body\n%v\nwant\n%v", create, wantCreate)
	}
	if ct := f.requests("create")[0].ContentType; ct != "application/json" {
		t.Errorf("create content-type %q", ct)
	}
	var cmd commandRequest
	json.Unmarshal(f.requests("cmd")[0].Body, &cmd)
	if cmd.Command != "python3" || cmd.Args[0] != "-c" || cmd.Cwd != vmHome || !cmd.Wait || cmd.Sudo ||
		len(cmd.Args) != 11 || cmd.Args[9] != stateRunner || // every run goes through the runner
		cmd.Args[8] != "import sys, os\nprint(6 * 7)\nprint(os.getcwd().endswith('/vercel/sandbox/data'))\nprint('warn', file=sys.stderr)" ||
		cmd.Env["PYTHONUNBUFFERED"] != "1" {
		t.Errorf("cmd body %+v", cmd)
	}
	assertStopped(t, f, 1)
}

func TestRunPrograms(t *testing.T) {
	f := newFake(t)
	s, _ := newTestSandbox(t, f, Config{})
	for _, tc := range []struct {
		name      string
		code      string
		lim       sandbox.Limits
		stdout    string
		stderrHas string
		exit      int
		limit     sandbox.Limit
		check     func(t *testing.T, res *sandbox.Result)
	}{
		{name: "exit code", code: "import sys; print('bye'); sys.exit(3)", stdout: "bye\n", exit: 3},
		{name: "traceback", code: "print(1/0)", stderrHas: "ZeroDivisionError", exit: 1},
		{name: "memory error", code: "raise MemoryError()", stderrHas: "MemoryError", exit: 1, limit: sandbox.LimitMemory,
			check: func(t *testing.T, res *sandbox.Result) {
				if res.Limit != sandbox.LimitMemory {
					t.Error("OutOfMemory not set")
				}
			}},
		{name: "memory limit enforced", code: "x = bytearray(256 << 20); print(len(x))", lim: sandbox.Limits{Memory: 64 << 20},
			stderrHas: "MemoryError", exit: 1, limit: sandbox.LimitMemory},
		{name: "stdout truncated", code: "print('x' * 5000)", lim: sandbox.Limits{Output: 1024}, stdout: strings.Repeat("x", 1024),
			check: func(t *testing.T, res *sandbox.Result) {
				if !res.StdoutTruncated || res.StdoutSize != 5001 || res.StderrTruncated {
					t.Errorf("truncated %v size %d", res.StdoutTruncated, res.StdoutSize)
				}
			}},
		{name: "stderr truncated", code: "import sys\nfor i in range(300): print('e' * 9, file=sys.stderr)", lim: sandbox.Limits{Output: 1024},
			check: func(t *testing.T, res *sandbox.Result) {
				if !res.StderrTruncated || res.StderrSize != 3000 || len(res.Stderr) != 1024 {
					t.Errorf("truncated %v size %d kept %d", res.StderrTruncated, res.StderrSize, len(res.Stderr))
				}
			}},
		{name: "unicode and binary-ish output", code: "print('π ≈ 3.14159')", stdout: "π ≈ 3.14159\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := s.Run(t.Context(), sandbox.Request{Code: tc.code, Limits: tc.lim})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if tc.stdout != "" && string(res.Stdout) != tc.stdout {
				t.Errorf("stdout %q, want %q", clip(string(res.Stdout), 100), clip(tc.stdout, 100))
			}
			if !strings.Contains(string(res.Stderr), tc.stderrHas) {
				t.Errorf("stderr %q, want it to contain %q", res.Stderr, tc.stderrHas)
			}
			if res.ExitCode != tc.exit || res.Limit != tc.limit {
				t.Errorf("exit %d limit %q, want %d %q", res.ExitCode, res.Limit, tc.exit, tc.limit)
			}
			if tc.check != nil {
				tc.check(t, res)
			}
		})
	}
	created, _ := f.stopCounts()
	assertStopped(t, f, created)
}

func TestTimeout(t *testing.T) {
	f := newFake(t)
	s, _ := newTestSandbox(t, f, Config{})
	start := time.Now()
	res, err := s.Run(t.Context(), sandbox.Request{
		Code: "import time\nprint('started')\nopen('partial.txt', 'w').write('p')\ntime.sleep(60)\nprint('never')",
		// Long enough for Python to start on a loaded machine.
		Limits: sandbox.Limits{Timeout: 3 * time.Second},
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("the run took %s; the timeout is 3s and the program sleeps 60s", took)
	}
	if res.Limit != sandbox.LimitTimeout || res.ExitCode != 137 {
		t.Errorf("limit %q exit %d, want timeout 137", res.Limit, res.ExitCode)
	}
	if string(res.Stdout) != "started\n" {
		t.Errorf("stdout %q, want the output written before the timeout", res.Stdout)
	}
	if len(res.Files) != 1 || res.Files[0].Name != "partial.txt" {
		t.Errorf("files %v, want partial.txt", res.Files)
	}
	var kill struct{ Signal int }
	if k := f.requests("kill"); len(k) != 1 {
		t.Errorf("%d kill calls, want 1", len(k))
	} else if json.Unmarshal(k[0].Body, &kill); kill.Signal != 9 {
		t.Errorf("kill signal %d, want 9", kill.Signal)
	}
	assertStopped(t, f, 1)
}

func TestFailureAfterCreateStops(t *testing.T) {
	for _, tc := range []struct {
		name   string
		op     string // the op that fails, always
		code   string
		files  bool
		wantOp string
	}{
		{name: "command refused", op: "cmd", wantOp: "run"},
		{name: "logs broken", op: "logs", wantOp: "run"},
		{name: "write files fails", op: "write", files: true, wantOp: "write files"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			s, _ := newTestSandbox(t, f, Config{})
			f.setHook(func(w http.ResponseWriter, r *http.Request, op string, n int) bool {
				if op == tc.op {
					apiErr(w, http.StatusBadRequest, "bad_request", "nope")
					return true
				}
				return false
			})
			req := sandbox.Request{Code: "print(1)"}
			if tc.files {
				req.Files = []sandbox.File{{Name: "a.txt", Data: []byte("a")}}
			}
			_, err := s.Run(t.Context(), req)
			var se *sandbox.Error
			if !errors.As(err, &se) || se.Op != tc.wantOp {
				t.Fatalf("error %v, want a sandbox.Error with op %q", err, tc.wantOp)
			}
			if !strings.Contains(err.Error(), "HTTP 400") || !strings.Contains(err.Error(), "nope") {
				t.Errorf("error %q does not say what the API said", err)
			}
			assertStopped(t, f, 1)
		})
	}
}

func TestRetries(t *testing.T) {
	for _, tc := range []struct {
		name       string
		failures   int // how many create calls fail first
		status     int
		retryAfter string
		wantErr    string
		minTook    time.Duration
	}{
		{name: "429 then success honours Retry-After", failures: 1, status: 429, retryAfter: "1", minTook: time.Second},
		{name: "5xx retried", failures: 3, status: 503},
		{name: "5xx until the attempts run out", failures: 99, status: 502, wantErr: "after 5 attempts"},
		{name: "Retry-After too long", failures: 99, status: 429, retryAfter: "3600", wantErr: "giving up"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			s, _ := newTestSandbox(t, f, Config{})
			f.setHook(func(w http.ResponseWriter, r *http.Request, op string, n int) bool {
				if op == "create" && n <= tc.failures {
					if tc.retryAfter != "" {
						w.Header().Set("Retry-After", tc.retryAfter)
					}
					apiErr(w, tc.status, "busy", "try later")
					return true
				}
				return false
			})
			start := time.Now()
			res, err := s.Run(t.Context(), sandbox.Request{Code: "print('ok')"})
			took := time.Since(start)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				if took > 3*time.Second {
					t.Errorf("took %s to give up", took)
				}
				assertStopped(t, f, 0)
				return
			}
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if string(res.Stdout) != "ok\n" {
				t.Errorf("stdout %q", res.Stdout)
			}
			if n := len(f.requests("create")); n != tc.failures+1 {
				t.Errorf("%d create calls, want %d", n, tc.failures+1)
			}
			if took < tc.minTook {
				t.Errorf("took %s, want at least %s (Retry-After)", took, tc.minTook)
			}
			assertStopped(t, f, 1)
		})
	}
}

func TestStopRetried(t *testing.T) {
	for _, tc := range []struct {
		name      string
		failures  int
		wantStops int
	}{
		{name: "stop fails twice", failures: 2, wantStops: 3},
		{name: "stop never works", failures: 99, wantStops: maxAttempts},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			s, logs := newTestSandbox(t, f, Config{})
			f.setHook(func(w http.ResponseWriter, r *http.Request, op string, n int) bool {
				if op == "stop" && n <= tc.failures {
					apiErr(w, http.StatusInternalServerError, "internal", "oops")
					return true
				}
				return false
			})
			res, err := s.Run(t.Context(), sandbox.Request{Code: "print('kept')"})
			if err != nil {
				t.Fatalf("Run: %v (a failed stop must not lose the result)", err)
			}
			if string(res.Stdout) != "kept\n" {
				t.Errorf("stdout %q", res.Stdout)
			}
			if n := len(f.requests("stop")); n != tc.wantStops {
				t.Errorf("%d stop calls, want %d", n, tc.wantStops)
			}
			if tc.failures > maxAttempts && !strings.Contains(logs.String(), "could not stop") {
				t.Errorf("the failed stop was not logged:\n%s", logs)
			}
		})
	}
}

func TestFiles(t *testing.T) {
	f := newFake(t)
	s, _ := newTestSandbox(t, f, Config{})
	for _, tc := range []struct {
		name    string
		code    string
		inputs  []sandbox.File
		lim     sandbox.Limits
		want    []string // name=content
		omitted []string
	}{
		{
			name:   "inputs read, outputs returned, unchanged inputs not",
			inputs: []sandbox.File{{Name: "in.csv", Data: []byte("a,b\n1,2\n")}, {Name: "sub/note.txt", Data: []byte("old")}},
			code: "import os\nrows = open('in.csv').read().splitlines()\nopen('out.txt', 'w').write(str(len(rows)))\n" +
				"open('sub/note.txt', 'w').write('new')\nos.makedirs('deep/er')\nopen('deep/er/x.bin', 'wb').write(bytes(range(256)))\n" +
				"os.symlink('/etc/passwd', 'link')",
			want:    []string{"deep/er/x.bin=" + string(makeBytes()), "out.txt=2", "sub/note.txt=new"},
			omitted: []string{"link (not a regular file)"},
		},
		{
			name:    "file count limit",
			code:    "for n in 'abc': open(n, 'w').write(n)",
			lim:     sandbox.Limits{Files: 2},
			want:    []string{"a=a", "b=b"},
			omitted: []string{"c (too many files)"},
		},
		{
			name:    "size budget",
			code:    "open('a-small', 'w').write('s' * 1000)\nopen('b-big', 'w').write('x' * 2500)",
			lim:     sandbox.Limits{DiskSize: 3000},
			want:    []string{"a-small=" + strings.Repeat("s", 1000)},
			omitted: []string{"b-big (too large)"},
		},
		{
			name: "absolute working directory path",
			code: "import os\nopen(os.path.join(os.getcwd(), 'abs.txt'), 'w').write('ok')",
			want: []string{"abs.txt=ok"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := s.Run(t.Context(), sandbox.Request{Code: tc.code, Files: tc.inputs, Limits: tc.lim})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.ExitCode != 0 {
				t.Fatalf("exit %d: %s", res.ExitCode, res.Stderr)
			}
			var got []string
			for _, f := range res.Files {
				got = append(got, f.Name+"="+string(f.Data))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("files %q, want %q", got, tc.want)
			}
			if !slices.Equal(res.FilesOmitted, tc.omitted) {
				t.Errorf("omitted %q, want %q", res.FilesOmitted, tc.omitted)
			}
		})
	}
	if w := f.requests("write"); len(w) != 1 || w[0].ContentType != "application/gzip" {
		t.Errorf("write calls %d, want 1 with application/gzip", len(w))
	}
}

func makeBytes() []byte {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

func TestInputNamesRefused(t *testing.T) {
	f := newFake(t)
	s, _ := newTestSandbox(t, f, Config{})
	for _, name := range []string{"", "/etc/passwd", "../x", "a/../../b", "./a", "a//b"} {
		_, err := s.Run(t.Context(), sandbox.Request{Code: "print(1)", Files: []sandbox.File{{Name: name}}})
		if err == nil {
			t.Errorf("input %q accepted", name)
		}
	}
	if n := len(f.requests("create")); n != 0 {
		t.Errorf("%d sandboxes created for refused requests", n)
	}
}

func TestWorkDirAlias(t *testing.T) {
	f := newFake(t)
	s, _ := newTestSandbox(t, f, Config{})
	s.workAlias = filepath.Join(t.TempDir(), "mnt", "data")
	res, err := s.Run(t.Context(), sandbox.Request{Code: fmt.Sprintf("open(%q + '/via-alias.txt', 'w').write('yes')", s.workAlias)})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(res.Files) != 1 || res.Files[0].Name != "via-alias.txt" || string(res.Files[0].Data) != "yes" {
		t.Errorf("files %v, stderr %s", res.Files, res.Stderr)
	}
}

func TestConcurrencyCap(t *testing.T) {
	f := newFake(t)
	s, _ := newTestSandbox(t, f, Config{Concurrency: 2})
	var wg sync.WaitGroup
	errs := make(chan error, 5)
	for range 5 {
		wg.Go(func() {
			res, err := s.Run(t.Context(), sandbox.Request{Code: "import time; time.sleep(0.2); print('ok')"})
			if err == nil && string(res.Stdout) != "ok\n" {
				err = fmt.Errorf("stdout %q", res.Stdout)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	f.mu.Lock()
	maxAlive := f.maxAlive
	f.mu.Unlock()
	if maxAlive != 2 {
		t.Errorf("at most %d sandboxes alive at once, want 2", maxAlive)
	}
	assertStopped(t, f, 5)

	// A caller waiting for a slot gives up with its context.
	hold := make(chan struct{})
	f.setHook(func(w http.ResponseWriter, r *http.Request, op string, n int) bool {
		if op == "create" {
			<-hold
		}
		return false
	})
	var holders sync.WaitGroup
	for range 2 {
		holders.Go(func() { s.Run(t.Context(), sandbox.Request{Code: "print(1)"}) })
	}
	time.Sleep(100 * time.Millisecond)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err := s.Run(ctx, sandbox.Request{Code: "print(1)"})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "free slot") {
		t.Errorf("error %v, want a deadline while waiting for a free slot", err)
	}
	close(hold)
	holders.Wait()
}

func TestCancel(t *testing.T) {
	f := newFake(t)
	s, _ := newTestSandbox(t, f, Config{})
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(500*time.Millisecond, cancel)
	start := time.Now()
	_, err := s.Run(ctx, sandbox.Request{Code: "import time; time.sleep(30)"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %s to notice the cancellation", took)
	}
	assertStopped(t, f, 1)
}

// jwt builds an unsigned token with the given claims.
func jwt(claims map[string]any) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(map[string]string{"alg": "RS256", "typ": "JWT"}) + "." + enc(claims) + ".c2lnbmF0dXJl"
}

func TestOIDC(t *testing.T) {
	f := newFake(t)
	valid := jwt(map[string]any{"owner_id": fakeTeam, "project_id": fakeProject, "exp": time.Now().Add(12 * time.Hour).Unix()})
	f.token = valid
	s, _ := newTestSandbox(t, f, Config{OIDCToken: valid})
	res, err := s.Run(t.Context(), sandbox.Request{Code: "print('oidc')"})
	if err != nil || string(res.Stdout) != "oidc\n" {
		t.Fatalf("Run: %v %v", res, err)
	}
	var create createRequest
	json.Unmarshal(f.requests("create")[0].Body, &create)
	if create.ProjectID != fakeProject || f.requests("create")[0].TeamID != fakeTeam {
		t.Errorf("project %q team %q, want them from the token's claims", create.ProjectID, f.requests("create")[0].TeamID)
	}

	// The token expires while the bot runs: runs fail, saying what to do,
	// without creating anything.
	s.api.creds.expires = time.Now().Add(-time.Minute)
	_, err = s.Run(t.Context(), sandbox.Request{Code: "print(1)"})
	var se *sandbox.Error
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "vercel env pull") || !strings.Contains(err.Error(), "12 hours") {
		t.Errorf("error %v, want advice to run vercel env pull", err)
	}
	if strings.Contains(fmt.Sprint(err), valid) {
		t.Error("the token is in the error")
	}
	if n := len(f.requests("create")); n != 1 {
		t.Errorf("%d creates, want 1", n)
	}
}

func TestNewErrors(t *testing.T) {
	f := newFake(t)
	expired := jwt(map[string]any{"owner_id": fakeTeam, "project_id": fakeProject, "exp": time.Now().Add(-time.Hour).Unix()})
	rejected := jwt(map[string]any{"owner_id": fakeTeam, "project_id": fakeProject, "exp": time.Now().Add(time.Hour).Unix()})
	for _, tc := range []struct {
		name string
		cfg  Config
		want []string
	}{
		{name: "nothing", cfg: Config{}, want: []string{"VERCEL_OIDC_TOKEN", "VERCEL_TOKEN", "VERCEL_TEAM_ID", "VERCEL_PROJECT_ID"}},
		{name: "token without team", cfg: Config{Token: fakeToken, ProjectID: fakeProject}, want: []string{"VERCEL_TEAM_ID not set"}},
		{name: "token alone", cfg: Config{Token: fakeToken}, want: []string{"VERCEL_TEAM_ID and VERCEL_PROJECT_ID not set"}},
		{name: "expired oidc", cfg: Config{OIDCToken: expired}, want: []string{"expired", "vercel env pull", "12 hours"}},
		// Not expired by its claims, but refused by the API (revoked).
		{name: "rejected oidc", cfg: Config{OIDCToken: rejected}, want: []string{"HTTP 403", "VERCEL_OIDC_TOKEN", "vercel env pull"}},
		{name: "not a jwt", cfg: Config{OIDCToken: "abc"}, want: []string{"not a JWT"}},
		{name: "no claims", cfg: Config{OIDCToken: jwt(map[string]any{"sub": "x"})}, want: []string{"no owner_id or project_id"}},
		{name: "wrong token", cfg: Config{Token: "tok_other_SECRET", TeamID: fakeTeam, ProjectID: fakeProject}, want: []string{"HTTP 403", "check VERCEL_TOKEN"}},
		{name: "wrong project", cfg: Config{Token: fakeToken, TeamID: fakeTeam, ProjectID: "prj_nope"}, want: []string{"HTTP 404", "prj_nope"}},
		{name: "odd vcpus", cfg: Config{Token: fakeToken, TeamID: fakeTeam, ProjectID: fakeProject, VCPUs: 3}, want: []string{"3 vCPUs"}},
		{name: "bad url", cfg: Config{APIURL: "ftp://x", Token: fakeToken, TeamID: fakeTeam, ProjectID: fakeProject}, want: []string{"SANDPIPER_VERCEL_API_URL"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.cfg.APIURL == "" {
				tc.cfg.APIURL = f.srv.URL
			}
			_, err := New(t.Context(), tc.cfg)
			if err == nil {
				t.Fatal("New succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			for _, secret := range []string{fakeToken, "tok_other_SECRET", expired, rejected} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error %q contains a token", err)
				}
			}
		})
	}
}

func TestCredentialPrecedence(t *testing.T) {
	oidc := jwt(map[string]any{"owner_id": "team_o", "project_id": "prj_o", "exp": time.Now().Add(time.Hour).Unix()})
	for _, tc := range []struct {
		name          string
		cfg           Config
		team, project string
		isOIDC        bool
	}{
		{name: "access token", cfg: Config{Token: "tok_SECRET_t", TeamID: "team_a", ProjectID: "prj_a"}, team: "team_a", project: "prj_a"},
		{name: "complete access token wins", cfg: Config{Token: "tok_SECRET_t", TeamID: "team_a", ProjectID: "prj_a", OIDCToken: oidc}, team: "team_a", project: "prj_a"},
		{name: "partial access token falls back to oidc", cfg: Config{Token: "tok_SECRET_t", OIDCToken: oidc}, team: "team_o", project: "prj_o", isOIDC: true},
		{name: "oidc", cfg: Config{OIDCToken: oidc}, team: "team_o", project: "prj_o", isOIDC: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := resolveCredentials(tc.cfg, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if c.teamID != tc.team || c.projectID != tc.project || c.oidc != tc.isOIDC {
				t.Errorf("got team %q project %q oidc %v", c.teamID, c.projectID, c.oidc)
			}
			if v := c.LogValue().String(); strings.Contains(v, c.token) {
				t.Errorf("LogValue %q shows the token", v)
			}
		})
	}
}

func TestVCPUsFor(t *testing.T) {
	for _, tc := range []struct {
		mem   int64
		least int
		want  int
		err   bool
	}{
		{512 << 20, 1, 1, false},
		{2048 << 20, 1, 1, false},
		{3000 << 20, 1, 2, false},
		{5000 << 20, 1, 4, false},
		{512 << 20, 4, 4, false},
		{17 << 30, 1, 0, true},
	} {
		got, err := vcpusFor(tc.mem, tc.least)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("vcpusFor(%d MiB, %d) = %d, %v; want %d", tc.mem>>20, tc.least, got, err, tc.want)
		}
	}
}
