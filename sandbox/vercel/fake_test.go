package vercel

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fakeVercel is the Sandbox REST API v1 as @vercel/sandbox 1.x sees it:
// the same paths, JSON bodies and NDJSON streams. A "sandbox" is a
// directory standing for the VM's root, and commands run for real (python3
// on this host) with their cwd mapped into it.
type fakeVercel struct {
	t       testing.TB
	srv     *httptest.Server
	python  string
	token   string
	team    string
	project string

	mu        sync.Mutex
	reqs      []fakeRequest
	sandboxes map[string]*fakeSandbox
	nextID    int
	alive     int
	maxAlive  int
	// hook, when set, may answer a request itself (returning true). op is
	// list, create, cmd, logs, kill, write, read or stop; n counts calls
	// of that op, from 1.
	hook  func(w http.ResponseWriter, r *http.Request, op string, n int) bool
	calls map[string]int
}

type fakeRequest struct {
	Op, Method, Path, TeamID, Auth, ContentType string
	Body                                        []byte
}

type fakeSandbox struct {
	id      string
	root    string
	stops   int
	created createRequest
	cmds    map[string]*fakeCmd
}

type fakeCmd struct {
	id   string
	info apiCommand
	proc *exec.Cmd

	mu     sync.Mutex
	events []logLine
	done   bool
	exit   int
}

const (
	fakeToken   = "tok_SECRET_123"
	fakeTeam    = "team_abc"
	fakeProject = "prj_xyz"
)

// testPython is the real interpreter (not a pyenv shim: those are slow).
var testPython = sync.OnceValue(func() string {
	if p := os.Getenv("SANDPIPER_TEST_PYTHON"); p != "" {
		return p
	}
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
})

func newFake(t testing.TB) *fakeVercel {
	t.Helper()
	py := testPython()
	if py == "" {
		t.Skip("no python3 on this host: the fake runs commands for real")
	}
	f := &fakeVercel{t: t, python: py, token: fakeToken, team: fakeTeam, project: fakeProject,
		sandboxes: map[string]*fakeSandbox{}, calls: map[string]int{}}
	mux := http.NewServeMux()
	handle := func(pattern, op string, h func(http.ResponseWriter, *http.Request, *fakeSandbox)) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			f.mu.Lock()
			f.reqs = append(f.reqs, fakeRequest{Op: op, Method: r.Method, Path: r.URL.Path, TeamID: r.URL.Query().Get("teamId"),
				Auth: r.Header.Get("Authorization"), ContentType: r.Header.Get("Content-Type"), Body: body})
			f.calls[op]++
			n, hook := f.calls[op], f.hook
			f.mu.Unlock()
			if r.Header.Get("Authorization") != "Bearer "+f.token || r.URL.Query().Get("teamId") != f.team {
				apiErr(w, http.StatusForbidden, "forbidden", "Not authorized")
				return
			}
			if hook != nil && hook(w, r, op, n) {
				return
			}
			var sb *fakeSandbox
			if id := r.PathValue("id"); id != "" {
				f.mu.Lock()
				sb = f.sandboxes[id]
				f.mu.Unlock()
				if sb == nil {
					apiErr(w, http.StatusNotFound, "not_found", "Sandbox not found")
					return
				}
			}
			h(w, r, sb)
		})
	}
	handle("GET /v1/sandboxes", "list", f.list)
	handle("POST /v1/sandboxes", "create", f.create)
	handle("POST /v1/sandboxes/{id}/cmd", "cmd", f.cmd)
	handle("GET /v1/sandboxes/{id}/cmd/{cmd}/logs", "logs", f.logs)
	handle("POST /v1/sandboxes/{id}/cmd/{cmd}/kill", "kill", f.kill)
	handle("POST /v1/sandboxes/{id}/fs/write", "write", f.write)
	handle("POST /v1/sandboxes/{id}/fs/read", "read", f.read)
	handle("POST /v1/sandboxes/{id}/stop", "stop", f.stop)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		f.srv.CloseClientConnections()
		f.srv.Close()
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, sb := range f.sandboxes {
			sb.killAll()
		}
	})
	return f
}

func apiErr(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func (f *fakeVercel) sandboxJSON(sb *fakeSandbox, status string) apiSandbox {
	return apiSandbox{ID: sb.id, Status: status, Runtime: sb.created.Runtime, Cwd: vmHome, Memory: int64(sb.created.Resources.VCPUs) * 2048,
		VCPUs: sb.created.Resources.VCPUs, Region: "iad1", Timeout: sb.created.Timeout}
}

func (f *fakeVercel) list(w http.ResponseWriter, r *http.Request, _ *fakeSandbox) {
	if r.URL.Query().Get("project") != f.project {
		apiErr(w, http.StatusNotFound, "not_found", "Project not found")
		return
	}
	writeJSON(w, map[string]any{"sandboxes": []any{}, "pagination": map[string]any{"count": 0, "next": nil, "prev": nil}})
}

func (f *fakeVercel) create(w http.ResponseWriter, r *http.Request, _ *fakeSandbox) {
	var req createRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.ProjectID != f.project || req.Runtime == "" {
		apiErr(w, http.StatusBadRequest, "bad_request", "Invalid request")
		return
	}
	root := f.t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, vmHome), 0o755); err != nil {
		f.t.Error(err)
	}
	f.mu.Lock()
	f.nextID++
	sb := &fakeSandbox{id: fmt.Sprintf("sbx_%d", f.nextID), root: root, created: req, cmds: map[string]*fakeCmd{}}
	f.sandboxes[sb.id] = sb
	f.alive++
	f.maxAlive = max(f.maxAlive, f.alive)
	f.mu.Unlock()
	writeJSON(w, map[string]any{"sandbox": f.sandboxJSON(sb, "running"), "routes": []any{}})
}

// vmPath maps a path in the VM to the host.
func (sb *fakeSandbox) vmPath(p, cwd string) string {
	if !path.IsAbs(p) {
		p = path.Join(cwd, p)
	}
	return filepath.Join(sb.root, filepath.FromSlash(path.Clean(p)))
}

func (f *fakeVercel) cmd(w http.ResponseWriter, r *http.Request, sb *fakeSandbox) {
	var req commandRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Command != "python3" {
		apiErr(w, http.StatusBadRequest, "bad_request", "Invalid request")
		return
	}
	c := &fakeCmd{}
	proc := exec.Command(f.python, req.Args...)
	proc.Dir = sb.vmPath(req.Cwd, vmHome)
	// A VM's /tmp is its own.
	tmp := sb.vmPath("/tmp", "/")
	os.MkdirAll(tmp, 0o755)
	proc.Env = []string{"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "TMPDIR=" + tmp}
	for k, v := range req.Env {
		proc.Env = append(proc.Env, k+"="+v)
	}
	proc.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, _ := proc.StdoutPipe()
	stderr, _ := proc.StderrPipe()
	if err := proc.Start(); err != nil {
		apiErr(w, http.StatusInternalServerError, "internal", err.Error())
		return
	}
	f.mu.Lock()
	c.id = fmt.Sprintf("cmd_%d", len(sb.cmds)+1)
	c.proc = proc
	c.info = apiCommand{ID: c.id, Name: req.Command, Args: req.Args, Cwd: req.Cwd, SandboxID: sb.id, StartedAt: time.Now().UnixMilli()}
	sb.cmds[c.id] = c
	f.mu.Unlock()
	var readers sync.WaitGroup
	for _, p := range []struct {
		name string
		r    io.Reader
	}{{"stdout", stdout}, {"stderr", stderr}} {
		readers.Go(func() {
			buf := make([]byte, 4096)
			for {
				n, err := p.r.Read(buf)
				if n > 0 {
					data, _ := json.Marshal(string(buf[:n]))
					c.mu.Lock()
					c.events = append(c.events, logLine{Stream: p.name, Data: data})
					c.mu.Unlock()
				}
				if err != nil {
					return
				}
			}
		})
	}
	go func() {
		readers.Wait()
		proc.Wait()
		code := proc.ProcessState.ExitCode()
		if ws, ok := proc.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
		c.mu.Lock()
		c.done, c.exit = true, code
		c.mu.Unlock()
	}()

	if !req.Wait {
		writeJSON(w, map[string]any{"command": c.info})
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	enc.Encode(map[string]any{"command": c.info})
	w.(http.Flusher).Flush()
	for {
		c.mu.Lock()
		done, code := c.done, c.exit
		c.mu.Unlock()
		if done {
			info := c.info
			info.ExitCode = &code
			enc.Encode(map[string]any{"command": info})
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (f *fakeVercel) command(w http.ResponseWriter, r *http.Request, sb *fakeSandbox) *fakeCmd {
	f.mu.Lock()
	c := sb.cmds[r.PathValue("cmd")]
	f.mu.Unlock()
	if c == nil {
		apiErr(w, http.StatusNotFound, "not_found", "Command not found")
	}
	return c
}

func (f *fakeVercel) logs(w http.ResponseWriter, r *http.Request, sb *fakeSandbox) {
	c := f.command(w, r, sb)
	if c == nil {
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	for i := 0; ; {
		c.mu.Lock()
		events, done := c.events[i:], c.done
		c.mu.Unlock()
		for _, e := range events {
			enc.Encode(e)
			i++
		}
		w.(http.Flusher).Flush()
		if done {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (f *fakeVercel) kill(w http.ResponseWriter, r *http.Request, sb *fakeSandbox) {
	c := f.command(w, r, sb)
	if c == nil {
		return
	}
	var req struct {
		Signal int `json:"signal"`
	}
	json.NewDecoder(r.Body).Decode(&req)
	syscall.Kill(-c.proc.Process.Pid, syscall.Signal(req.Signal))
	writeJSON(w, map[string]any{"command": c.info})
}

func (f *fakeVercel) write(w http.ResponseWriter, r *http.Request, sb *fakeSandbox) {
	if r.Header.Get("Content-Type") != "application/gzip" {
		apiErr(w, http.StatusBadRequest, "bad_request", "want application/gzip")
		return
	}
	zr, err := gzip.NewReader(r.Body)
	if err != nil {
		apiErr(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			apiErr(w, http.StatusBadRequest, "bad_request", err.Error())
			return
		}
		p := sb.vmPath(h.Name, r.Header.Get("X-Cwd"))
		if !strings.HasPrefix(p, sb.root) {
			apiErr(w, http.StatusBadRequest, "bad_request", "path escapes")
			return
		}
		switch h.Typeflag {
		case tar.TypeDir:
			os.MkdirAll(p, 0o777)
		case tar.TypeReg:
			os.MkdirAll(filepath.Dir(p), 0o777)
			data, _ := io.ReadAll(tr)
			os.WriteFile(p, data, 0o666)
		}
	}
	writeJSON(w, map[string]any{})
}

func (f *fakeVercel) read(w http.ResponseWriter, r *http.Request, sb *fakeSandbox) {
	var req struct{ Path, Cwd string }
	json.NewDecoder(r.Body).Decode(&req)
	data, err := os.ReadFile(sb.vmPath(req.Path, req.Cwd))
	if errors.Is(err, os.ErrNotExist) {
		apiErr(w, http.StatusNotFound, "file_not_found", "File not found")
		return
	}
	if err != nil {
		apiErr(w, http.StatusInternalServerError, "internal", err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Write(data)
}

func (f *fakeVercel) stop(w http.ResponseWriter, r *http.Request, sb *fakeSandbox) {
	f.mu.Lock()
	sb.stops++
	if sb.stops == 1 {
		f.alive--
	}
	sb.killAll()
	f.mu.Unlock()
	writeJSON(w, map[string]any{"sandbox": f.sandboxJSON(sb, "stopping")})
}

func (sb *fakeSandbox) killAll() {
	for _, c := range sb.cmds {
		syscall.Kill(-c.proc.Process.Pid, syscall.SIGKILL)
	}
}

// ops lists the ops of the requests so far, in order.
func (f *fakeVercel) ops() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ops []string
	for _, r := range f.reqs {
		ops = append(ops, r.Op)
	}
	return ops
}

func (f *fakeVercel) requests(op string) []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fakeRequest
	for _, r := range f.reqs {
		if r.Op == op {
			out = append(out, r)
		}
	}
	return out
}

// stops counts stop calls per sandbox, and sandboxes created.
func (f *fakeVercel) stopCounts() (created int, stopped map[string]int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	stopped = map[string]int{}
	for id, sb := range f.sandboxes {
		stopped[id] = sb.stops
	}
	return len(f.sandboxes), stopped
}

func (f *fakeVercel) setHook(h func(w http.ResponseWriter, r *http.Request, op string, n int) bool) {
	f.mu.Lock()
	f.hook = h
	f.mu.Unlock()
}
