package vercel

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sandpiper-bot/sandpiper/sandbox"
	"github.com/sandpiper-bot/sandpiper/sandbox/internal/remote"
)

// DefaultAPIURL is the Vercel REST API's base URL.
const DefaultAPIURL = "https://api.vercel.com"

// Runtime is the sandbox image every run uses.
const Runtime = "python3.13"

// WorkDir is the program's working directory inside the VM: input files
// are placed there, and files created or changed there are the outputs.
const WorkDir = vmHome + "/" + workName

// Defaults and limits, in one place.
const (
	DefaultConcurrency = 10 // sandboxes alive at once (Vercel's Hobby plan allows 10)
	DefaultVCPUs       = 1  // each vCPU comes with 2 GiB of memory
	maxVCPUs           = 8
	memoryPerVCPU      = 2048 << 20 // bytes; fixed by Vercel

	vmHome   = "/vercel/sandbox" // the VM's writable directory, where commands start
	workName = "data"            // WorkDir, relative to vmHome

	// lifetimeSlack is how long a sandbox may live past the run's timeout:
	// time to create it, write and read files. Should stopping it fail, the
	// VM ends itself then.
	lifetimeSlack = 2 * time.Minute
	// requestTimeout bounds one API call that is not a stream.
	requestTimeout = 30 * time.Second
	// stopTimeout bounds stopping a sandbox, retries included.
	stopTimeout = 30 * time.Second
	// outputGrace is how long the output may trail the command's end
	// before the rest is given up.
	outputGrace = 3 * time.Second
	// killGrace is how long a killed command may take to report its end.
	killGrace = 2 * time.Second
	// sigkill is SIGKILL's number, sent to a program past its timeout.
	sigkill = 9

	maxAttempts   = 5 // tries of one API call
	retryBase     = 250 * time.Millisecond
	retryFactor   = 3
	maxBackoff    = 10 * time.Second
	maxRetryAfter = 30 * time.Second // a longer Retry-After fails the call at once
	maxErrorBody  = 64 << 10
	maxJSONBody   = 4 << 20

	userAgent = "sandpiper (github.com/sandpiper-bot/sandpiper/sandbox/vercel)"
)

// programEnv is added to the VM's environment for the program.
var programEnv = map[string]string{
	"PYTHONUNBUFFERED":        "1", // output written before a timeout is kept
	"PYTHONDONTWRITEBYTECODE": "1",
	"MPLBACKEND":              "Agg",
}

// Config configures a [Sandbox]. Zero fields take defaults. The
// credentials are either Token, TeamID and ProjectID (an access token, from
// VERCEL_TOKEN, VERCEL_TEAM_ID and VERCEL_PROJECT_ID), or OIDCToken (from
// VERCEL_OIDC_TOKEN, which names the team and project itself). A complete
// access token wins.
type Config struct {
	APIURL    string // default DefaultAPIURL
	Token     string
	TeamID    string
	ProjectID string
	OIDCToken string
	// VCPUs is the least number of vCPUs per sandbox: 1 or an even number
	// up to 8 (default 1). A run whose memory limit needs more gets more.
	VCPUs int
	// Concurrency bounds sandboxes alive at once (default DefaultConcurrency).
	Concurrency int
	// Limits are the defaults for requests; a request's own non-zero
	// limits win.
	Limits sandbox.Limits
	// Logger receives start-up facts, retries and cleanup failures
	// (default: discard).
	Logger *slog.Logger
}

// Sandbox is the Vercel backend. It is safe for concurrent use.
type Sandbox struct {
	cfg Config
	log *slog.Logger
	api *client
	sem chan struct{}

	stopping sync.WaitGroup // stops in flight, which Close waits for

	// workAlias is linked to WorkDir in the VM (tests turn it off: the
	// fake runs commands on the host).
	workAlias string
}

// New checks the configuration and the credentials (with one API call
// that creates nothing) and returns the backend. Its errors say what to fix.
func New(ctx context.Context, cfg Config) (*Sandbox, error) {
	if cfg.APIURL == "" {
		cfg.APIURL = DefaultAPIURL
	}
	u, err := url.Parse(cfg.APIURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("vercel: SANDPIPER_VERCEL_API_URL=%q is not an http(s) URL", cfg.APIURL)
	}
	if cfg.VCPUs == 0 {
		cfg.VCPUs = DefaultVCPUs
	}
	if !validVCPUs(cfg.VCPUs) {
		return nil, fmt.Errorf("vercel: %d vCPUs: want 1 or an even number up to %d", cfg.VCPUs, maxVCPUs)
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	cfg.Limits = cfg.Limits.WithDefaults()
	if _, err := vcpusFor(cfg.Limits.Memory, cfg.VCPUs); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	creds, err := resolveCredentials(cfg, time.Now())
	if err != nil {
		return nil, err
	}
	s := &Sandbox{
		cfg: cfg,
		log: log,
		api: &client{base: strings.TrimRight(cfg.APIURL, "/"), creds: creds, http: hc, log: log, retryBase: retryBase},
		sem: make(chan struct{}, cfg.Concurrency),

		workAlias: sandbox.WorkDir,
	}
	if err := s.api.checkCredentials(ctx); err != nil {
		return nil, fmt.Errorf("vercel: cannot use the Sandbox API at %s: %w", s.api.base, err)
	}
	if creds.oidc {
		if left := time.Until(creds.expires); !creds.expires.IsZero() && left < time.Hour {
			log.Warn("sandbox: VERCEL_OIDC_TOKEN expires soon; run `vercel env pull` and restart, or use VERCEL_TOKEN",
				"expires", creds.expires, "in", left.Round(time.Minute))
		}
	}
	log.Info("sandbox: vercel backend ready", "api", s.api.base, "credentials", creds,
		"runtime", Runtime, "vcpus", cfg.VCPUs, "concurrency", cfg.Concurrency)
	return s, nil
}

func validVCPUs(n int) bool { return n == 1 || (n >= 2 && n <= maxVCPUs && n%2 == 0) }

// vcpusFor is the vCPU count that gives at least memory bytes, and at
// least least vCPUs.
// MaxMemory is the largest memory limit a Vercel Sandbox can give a run.
const MaxMemory = maxVCPUs * memoryPerVCPU

func vcpusFor(memory int64, least int) (int, error) {
	n := max(int((memory+memoryPerVCPU-1)/memoryPerVCPU), least)
	if n > 1 && n%2 == 1 {
		n++
	}
	if n > maxVCPUs {
		return 0, fmt.Errorf("vercel: a memory limit of %d MiB needs more than %d vCPUs (%d MiB each)", memory>>20, maxVCPUs, memoryPerVCPU>>20)
	}
	return n, nil
}

// Info reports the backend's limits, as a run gets them: the VM has no
// CPU quota of its own (its vCPUs are the bound) and no process limit.
func (s *Sandbox) Info() sandbox.Info {
	return sandbox.Info{
		Backend: sandbox.BackendVercel,
		Limits:  s.cfg.Limits,
		Unenforced: []sandbox.Unenforced{
			{Field: "CPUs", Why: "a Vercel Sandbox has no CPU quota: its vCPUs (SANDPIPER_VERCEL_VCPUS) bound it"},
			{Field: "Processes", Why: "a Vercel Sandbox has no process limit"},
		},
		KeepsState: true,
	}
}

// Run runs req in a fresh sandbox. It waits for a free slot first (see
// Config.Concurrency), honouring ctx. A program that fails, times out or
// exceeds a limit is reported in the Result; an error means the sandbox
// could not be created or used, or ctx ended the run. The sandbox is
// stopped in every case.
func (s *Sandbox) Run(ctx context.Context, req sandbox.Request) (*sandbox.Result, error) {
	lim := req.Limits.Or(s.cfg.Limits)
	if err := req.Check(lim); err != nil {
		return nil, err
	}
	vcpus, err := vcpusFor(lim.Memory, s.cfg.VCPUs)
	if err != nil {
		return nil, err
	}
	if err := s.api.creds.check(time.Now()); err != nil {
		return nil, &sandbox.Error{Op: "auth", Err: err}
	}
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("sandbox: waiting for a free slot: %w", context.Cause(ctx))
	}
	defer func() { <-s.sem }()
	return s.run(ctx, req, lim, vcpus)
}

// errBackstop ends a run whose API calls take far longer than they should.
var errBackstop = errors.New("the Sandbox API did not finish the run in time")

func (s *Sandbox) run(parent context.Context, req sandbox.Request, lim sandbox.Limits, vcpus int) (*sandbox.Result, error) {
	start := time.Now()
	lifetime := lim.Timeout + lifetimeSlack
	ctx, cancel := context.WithTimeoutCause(parent, lifetime, errBackstop)
	defer cancel()

	sb, err := s.api.create(ctx, createRequest{
		Ports:         []int{},
		Timeout:       lifetime.Milliseconds(),
		Resources:     resources{VCPUs: vcpus},
		Runtime:       Runtime,
		NetworkPolicy: &networkPolicy{Mode: "deny-all"},
	})
	if err != nil {
		return nil, s.fail(parent, "create", err)
	}
	log := s.log.With("sandbox", sb.ID)
	log.DebugContext(ctx, "sandbox: created", "took", time.Since(start).Round(time.Millisecond), "region", sb.Region)
	s.stopping.Add(1)
	defer func() {
		defer s.stopping.Done()
		s.stop(parent, log, sb.ID)
	}()

	if len(req.Files) > 0 || req.KeepState {
		sf, err := stateFiles(req, lim)
		if err != nil {
			return nil, &sandbox.Error{Op: "read state", Err: err}
		}
		tgz, err := inputTar(req.Files, sf)
		if err != nil {
			return nil, &sandbox.Error{Op: "write files", Err: err}
		}
		if err := s.api.writeFiles(ctx, sb.ID, "/", tgz); err != nil {
			return nil, s.fail(parent, "write files", err)
		}
	}

	res, err := s.exec(ctx, sb.ID, req.Code, lim, req.KeepState)
	if err != nil {
		return nil, s.fail(parent, "run", err)
	}
	files, omitted, capped, err := s.collect(ctx, sb.ID, req.Files, lim)
	if err != nil {
		if parent.Err() != nil {
			return nil, fmt.Errorf("sandbox: collect files: %w", context.Cause(parent))
		}
		// The program ran: keep what it printed, and say the files are missing.
		log.WarnContext(ctx, "sandbox: output files not collected", "err", err)
	}
	if req.KeepState {
		res.State = s.readState(ctx, sb.ID, res, lim)
	}
	remote.Attach(res, lim, files, omitted, capped, err)
	res.Duration = time.Since(start)
	log.DebugContext(ctx, "sandbox: ran", "exit", res.ExitCode, "limit", res.Limit, "took", res.Duration.Round(time.Millisecond))
	return res, nil
}

// fail wraps a machinery failure; a cancelled caller gets its own cause.
func (s *Sandbox) fail(parent context.Context, op string, err error) error {
	if parent.Err() != nil {
		return fmt.Errorf("sandbox: %s: %w", op, context.Cause(parent))
	}
	return &sandbox.Error{Op: op, Err: err}
}

// stop stops the sandbox, whatever ended the run: on a context of its own,
// with do's bounded retries. A sandbox that cannot be stopped ends itself
// at its lifetime.
func (s *Sandbox) stop(ctx context.Context, log *slog.Logger, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
	defer cancel()
	start := time.Now()
	err := s.api.stop(ctx, id)
	var ae *APIError
	if errors.As(err, &ae) && (ae.StatusCode == http.StatusNotFound || ae.StatusCode == http.StatusGone) {
		err = nil // already gone
	}
	if err != nil {
		log.ErrorContext(ctx, "sandbox: could not stop the sandbox; it ends itself at its timeout", "err", err)
		return
	}
	log.DebugContext(ctx, "sandbox: stopped", "took", time.Since(start).Round(time.Millisecond))
}

// exec runs the program, streaming its output, and ends it at the timeout.
func (s *Sandbox) exec(ctx context.Context, id, code string, lim sandbox.Limits, keepState bool) (*sandbox.Result, error) {
	stdout := &sandbox.CapBuffer{Max: lim.Output}
	stderr := &sandbox.CapBuffer{Max: lim.Output}
	cmd, stream, err := s.api.startCommand(ctx, id, commandRequest{
		Command: "python3",
		Args:    launcherArgs(workName, s.workAlias, lim, code, keepState),
		Cwd:     vmHome,
		Env:     programEnv,
	})
	if err != nil {
		return nil, err
	}
	defer stream.Close()
	timer := time.NewTimer(lim.Timeout)
	defer timer.Stop()

	logsCtx, stopLogs := context.WithCancel(ctx)
	defer stopLogs()
	logsDone := make(chan error, 1)
	go func() { logsDone <- s.api.streamLogs(logsCtx, id, cmd.ID, stdout, stderr) }()
	type exit struct {
		code int
		err  error
	}
	exitc := make(chan exit, 1)
	go func() {
		code, err := stream.wait()
		exitc <- exit{code, err}
	}()

	var (
		end      exit
		ended    bool
		timedOut bool
	)
	select {
	case end = <-exitc:
		ended = true
	case <-timer.C:
		timedOut = true
		kctx, cancel := context.WithTimeout(ctx, killGrace)
		if err := s.api.kill(kctx, id, cmd.ID, sigkill); err != nil {
			s.log.WarnContext(ctx, "sandbox: could not kill the program past its timeout; stopping the sandbox ends it", "sandbox", id, "err", err)
		}
		cancel()
		select {
		case end = <-exitc:
			ended = true
		case <-time.After(killGrace):
		}
	case <-ctx.Done():
		stopLogs()
		<-logsDone
		return nil, context.Cause(ctx)
	}

	var logsErr error
	select {
	case logsErr = <-logsDone:
	case <-time.After(outputGrace):
		s.log.DebugContext(ctx, "sandbox: output still streaming after the program ended; cut", "sandbox", id)
		stopLogs()
		<-logsDone
	}
	if !timedOut {
		if end.err != nil {
			return nil, end.err
		}
		if logsErr != nil {
			return nil, logsErr
		}
	}

	res := sandbox.Captured(stdout, stderr)
	res.ExitCode = end.code
	last := remote.LastLine(res.Stderr)
	switch {
	case timedOut:
		res.Limit = sandbox.LimitTimeout
		if !ended || end.err != nil || end.code == 0 {
			res.ExitCode = 128 + sigkill
		}
	case end.code != 0 && bytes.Contains(last, []byte("MemoryError")):
		res.Limit = sandbox.LimitMemory
	case end.code == 128+sigxcpu || end.code == -sigxcpu:
		res.Limit = sandbox.LimitCPU
	case end.code != 0 && bytes.Contains(last, []byte("File too large")):
		res.Limit = sandbox.LimitDisk
	}
	return res, nil
}

// sigxcpu is the signal RLIMIT_CPU sends.
const sigxcpu = 24

// collect reads back the files the program created or changed: the
// collector lists them in the VM (see [remote.Files]), and capped reports
// whether the listing was cut.
func (s *Sandbox) collect(ctx context.Context, id string, inputs []sandbox.File, lim sandbox.Limits) (files []sandbox.File, omitted []string, capped bool, err error) {
	out := &sandbox.CapBuffer{Max: remote.MaxManifest}
	errOut := &sandbox.CapBuffer{Max: 4 << 10}
	cmd, stream, err := s.api.startCommand(ctx, id, commandRequest{
		Command: "python3",
		Args:    remote.CollectorArgs(workName, lim, inputs),
		Cwd:     vmHome,
		Env:     map[string]string{},
	})
	if err != nil {
		return nil, nil, false, err
	}
	defer stream.Close()
	if err := s.api.streamLogs(ctx, id, cmd.ID, out, errOut); err != nil {
		return nil, nil, false, err
	}
	code, err := stream.wait()
	if err != nil {
		return nil, nil, false, err
	}
	return remote.Files(ctx, out, code, errOut.Bytes(), lim, func(ctx context.Context, name string, max int64) ([]byte, error) {
		return s.api.readFile(ctx, id, path.Join(WorkDir, name), max)
	})
}

// stateFiles are what a stateful run's state directory holds when it
// starts: "max", and the state to restore as "in" (read whole from
// StateFrom: the VM takes it as one archive).
func stateFiles(req sandbox.Request, lim sandbox.Limits) ([]sandbox.File, error) {
	if !req.KeepState {
		return nil, nil
	}
	files := []sandbox.File{{Name: stateDir + "/max", Data: []byte(sandbox.StateBounds(lim))}}
	state := req.State
	if req.StateFrom != nil {
		state = make([]byte, req.StateLen)
		if _, err := io.ReadFull(req.StateFrom, state); err != nil {
			return nil, err
		}
	}
	if len(state) > 0 {
		files = append(files, sandbox.File{Name: stateDir + "/in", Data: state})
	}
	return files, nil
}

// readState reads back what a stateful run left in its state directory,
// each file within its bound: the report, and the state unless the run
// was stopped (its state would be dropped).
func (s *Sandbox) readState(ctx context.Context, id string, res *sandbox.Result, lim sandbox.Limits) *sandbox.StateResult {
	report, err := s.api.readFile(ctx, id, stateDir+"/report.json", sandbox.MaxStateReport)
	if err != nil {
		if !errors.Is(err, errNotFound) {
			s.log.WarnContext(ctx, "sandbox: the state's report could not be read", "sandbox", id, "err", err)
		}
		return sandbox.ParseState(nil, nil)
	}
	var data []byte
	if res.Limit != sandbox.LimitTimeout && res.Limit != sandbox.LimitMemory {
		data, err = s.api.readFile(ctx, id, stateDir+"/out", lim.StateSize)
		if err != nil && !errors.Is(err, errNotFound) {
			s.log.WarnContext(ctx, "sandbox: the saved state could not be read", "sandbox", id, "err", err)
		}
	}
	return sandbox.ParseState(report, data)
}

// Close waits, a bounded time, for sandboxes being stopped, so that a
// shutting-down bot leaves none running. Runs in flight are not affected.
func (s *Sandbox) Close() error {
	done := make(chan struct{})
	go func() {
		s.stopping.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(stopTimeout):
		s.log.Warn("sandbox: gave up waiting for sandboxes to stop; they end themselves at their timeout")
	}
	s.api.http.CloseIdleConnections()
	return nil
}

// inputTar packs the input files as the API's fs/write wants them: a
// gzipped tar whose entry names are relative to /, and the files named by
// absolute paths in other. Modes are permissive so that the program may
// change its inputs whoever the extractor runs as.
func inputTar(files, other []sandbox.File) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	now := time.Now()
	dirs := map[string]bool{}
	var addDir func(d string) error
	addDir = func(d string) error {
		if dirs[d] || d == vmHome || d == "/" {
			return nil
		}
		if err := addDir(path.Dir(d)); err != nil {
			return err
		}
		dirs[d] = true
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(d, "/") + "/", Mode: 0o777, ModTime: now})
	}
	for i, f := range slices.Concat(files, other) {
		p := f.Name
		if i < len(files) {
			p = path.Join(WorkDir, f.Name)
		}
		if err := addDir(path.Dir(p)); err != nil {
			return nil, err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(p, "/"), Mode: 0o666, Size: int64(len(f.Data)), ModTime: now}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
