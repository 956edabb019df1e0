package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpiper-bot/sandpiper/sandbox"
	"github.com/sandpiper-bot/sandpiper/sandbox/internal/remote"
)

// Defaults, in one place.
const (
	DefaultConcurrency  = 10               // claims held at once
	DefaultReadyTimeout = 60 * time.Second // for a claimed sandbox to be ready
	DefaultRESTPort     = 8080             // sandboxd's REST API (files)
	DefaultGRPCPort     = 9090             // sandboxd's ProcessService

	// lifetimeSlack is how long a claim may live past its wait and its
	// run's timeout: time to write and read files and to delete it.
	// Should the bot not delete it, agent-sandbox does then.
	lifetimeSlack = 2 * time.Minute
	// releaseTimeout bounds deleting a claim, retries included.
	releaseTimeout = 30 * time.Second
	// rebindPoll is how often a run whose sandbox was deleted before it
	// was ready looks at its claim again for the next one.
	rebindPoll = 100 * time.Millisecond
	// startTimeout bounds New's checks.
	startTimeout = 30 * time.Second
)

// Config configures a [Sandbox]. Zero fields take defaults; WarmPool is
// required.
type Config struct {
	// WarmPool is the SandboxWarmPool every run claims a sandbox from. A
	// claim names a pool, not a template (v1beta1); a pool of 0 replicas
	// starts each sandbox cold from its template.
	WarmPool string
	// Namespace holds the pool and the claims (default: the kubeconfig
	// context's namespace; in a pod, the pod's own).
	Namespace string
	// Kubeconfig is a kubeconfig file, or a list of them in KUBECONFIG's
	// syntax. Empty: KUBECONFIG's files or ~/.kube/config, and in a pod
	// without either its service account.
	Kubeconfig string
	// Context is the kubeconfig context (default: its current context).
	Context string
	// ReadyTimeout bounds the wait for a claimed sandbox to become ready
	// (default DefaultReadyTimeout): when the pool is empty, a run waits
	// this long for a cold start, then fails with ErrNotReady.
	ReadyTimeout time.Duration
	// Concurrency bounds the claims held at once (default
	// DefaultConcurrency); further runs wait.
	Concurrency int
	// RESTPort and GRPCPort are where sandboxd listens in the sandbox's pod
	// (defaults DefaultRESTPort and DefaultGRPCPort).
	RESTPort, GRPCPort int
	// Limits are the defaults for requests; a request's own non-zero
	// limits win.
	Limits sandbox.Limits
	// Logger receives start-up facts, claims that could not be deleted
	// and runs' timings at debug level (default: discard).
	Logger *slog.Logger
}

// Sandbox is the Kubernetes backend. It is safe for concurrent use, and
// a [prometheus.Collector] of its metrics.
type Sandbox struct {
	cfg     Config
	log     *slog.Logger
	k8s     *cluster
	sem     chan struct{}
	metrics *metrics

	// slack is lifetimeSlack; tests shorten it.
	slack time.Duration
	// onReady, if set, is told how long each claim took to be ready.
	onReady func(time.Duration)
}

// New checks the configuration and the cluster (the API server answers,
// agent-sandbox's CRDs are installed, the warm pool exists, the bot may
// do what a run does) and returns the backend. Its errors say what to
// fix; see ErrNoCluster, ErrUnreachable, ErrNoCRDs, ErrNoWarmPool and
// ErrForbidden.
func New(ctx context.Context, cfg Config) (*Sandbox, error) {
	s, err := newSandbox(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	pool, err := s.k8s.pool(ctx, s.cfg.WarmPool)
	if err != nil {
		return nil, err
	}
	denied, err := s.k8s.denied(ctx)
	if err != nil {
		return nil, err
	}
	if len(denied) > 0 {
		return nil, fmt.Errorf("kubernetes: %w in %s: may not %s; %s", ErrForbidden, s.k8s.where(), strings.Join(denied, ", "), rbacHint)
	}
	s.log.Info("sandbox: kubernetes backend ready", "cluster", s.k8s.host, "namespace", s.k8s.namespace,
		"warm_pool", s.cfg.WarmPool, "template", pool.Spec.SandboxTemplateRef.Name, "ready", pool.Status.ReadyReplicas,
		"concurrency", s.cfg.Concurrency, "ready_timeout", s.cfg.ReadyTimeout)
	return s, nil
}

// newSandbox applies the defaults and loads the client configuration.
func newSandbox(cfg Config) (*Sandbox, error) {
	if cfg.WarmPool == "" {
		return nil, errors.New("kubernetes: no warm pool: set SANDPIPER_KUBERNETES_WARM_POOL to a SandboxWarmPool's name")
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = DefaultReadyTimeout
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.RESTPort == 0 {
		cfg.RESTPort = DefaultRESTPort
	}
	if cfg.GRPCPort == 0 {
		cfg.GRPCPort = DefaultGRPCPort
	}
	cfg.Limits = cfg.Limits.WithDefaults()
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	k, err := connect(cfg)
	if err != nil {
		return nil, err
	}
	return &Sandbox{cfg: cfg, log: log, k8s: k, sem: make(chan struct{}, cfg.Concurrency), metrics: newMetrics(), slack: lifetimeSlack}, nil
}

// Info reports the backend's limits, as a run gets them: the CPUs and
// processes of a run are its pod's, set by the sandbox template, and a
// run keeps no state.
func (s *Sandbox) Info() sandbox.Info {
	return sandbox.Info{
		Backend: sandbox.BackendKubernetes,
		Limits:  s.cfg.Limits,
		Unenforced: []sandbox.Unenforced{
			{Field: "CPUs", Why: "the sandbox template's pod CPU limit bounds it"},
			{Field: "Processes", Why: "the kubelet's pod PID limit bounds it"},
		},
	}
}

// Run runs req in a sandbox claimed for it alone, and deletes the claim
// after, whatever happened. It waits for a free slot first (see
// Config.Concurrency), honouring ctx, and up to Config.ReadyTimeout for
// a ready sandbox. A program that fails, times out or passes a limit is
// reported in the Result, and so is a sandbox deleted during the run; an
// error means no sandbox could be had or used, or ctx ended the run (its
// program is killed).
func (s *Sandbox) Run(ctx context.Context, req sandbox.Request) (*sandbox.Result, error) {
	lim := req.Limits.Or(s.cfg.Limits)
	if err := req.Check(lim); err != nil {
		return nil, err
	}
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("sandbox: waiting for a free slot: %w", context.Cause(ctx))
	}
	defer func() { <-s.sem }()
	res, err := s.run(ctx, req, lim)
	s.metrics.count(ctx, res, err)
	return res, err
}

func (s *Sandbox) run(ctx context.Context, req sandbox.Request, lim sandbox.Limits) (*sandbox.Result, error) {
	start := time.Now()
	name := claimName()
	if err := s.create(ctx, name, s.cfg.ReadyTimeout+lim.Timeout+s.slack); err != nil {
		if errors.Is(err, ErrUnreachable) || ctx.Err() != nil {
			s.release(ctx, name, false) // the request may have reached the server
		}
		return nil, s.fail(ctx, "claim", err)
	}
	s.metrics.claims.WithLabelValues("created").Inc()
	s.metrics.held.Inc()
	defer func() {
		s.release(ctx, name, true)
		s.metrics.held.Dec()
	}()
	l, err := s.await(ctx, name)
	if err != nil {
		return nil, s.fail(ctx, "claim", err)
	}
	ready := time.Since(start)
	s.metrics.claimSeconds.Observe(ready.Seconds())
	if s.onReady != nil {
		s.onReady(ready)
	}
	log := s.log.With(logClaim(l))

	// A sandbox deleted during the run (by an operator, a node's
	// drain, the pod's own memory limit under gVisor) ends it with a
	// Result that says so, not with a wait for a pod that is gone.
	gone := make(chan string, 1)
	watchCtx, stopWatch := context.WithCancel(ctx)
	var watching sync.WaitGroup
	watching.Go(func() {
		s.watchGone(watchCtx, l, func(why string) { gone <- why })
	})
	defer func() {
		stopWatch()
		watching.Wait()
	}()

	p, err := s.dial(l.podIP)
	if err != nil {
		return nil, &sandbox.Error{Op: "connect", Err: err}
	}
	defer p.close()
	for _, f := range req.Files {
		if err := p.put(ctx, f); err != nil {
			if why := s.why(ctx, l, gone); why != "" {
				return s.goneResult(nil, l, why, lim, start), nil
			}
			return nil, s.fail(ctx, "write files", fmt.Errorf("the sandbox %s: %w", l.sandbox, err))
		}
	}
	wrote := time.Since(start)
	res, why, err := s.exec(ctx, p, l, req.Code, lim, gone)
	switch {
	case why != "":
		return s.goneResult(res, l, why, lim, start), nil
	case err != nil:
		return nil, s.fail(ctx, "run", err)
	}
	ran := time.Since(start)
	files, omitted, capped, err := p.collect(ctx, req.Files, lim)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("sandbox: collect files: %w", context.Cause(ctx))
		}
		// The program ran: keep what it printed, and say the files are missing.
		if why := s.why(ctx, l, gone); why != "" {
			err = fmt.Errorf("the sandbox %s", why)
		}
		log.WarnContext(ctx, "sandbox: output files not collected", "err", err)
	}
	remote.Attach(res, lim, files, omitted, capped, err)
	res.Duration = time.Since(start)
	log.DebugContext(ctx, "sandbox: ran", "exit", res.ExitCode, "limit", res.Limit,
		"ready", ready.Round(time.Millisecond), "files_written", wrote.Round(time.Millisecond),
		"ran", ran.Round(time.Millisecond), "total", res.Duration.Round(time.Millisecond))
	return res, nil
}

// exec runs the program and ends it at the timeout. why is set, with
// the output so far, when the sandbox went away during the run.
func (s *Sandbox) exec(ctx context.Context, p *pod, l *lease, code string, lim sandbox.Limits, gone <-chan string) (res *sandbox.Result, why string, err error) {
	stdout := &sandbox.CapBuffer{Max: lim.Output}
	stderr := &sandbox.CapBuffer{Max: lim.Output}
	r, err := p.start(ctx, launcherCommand(lim, code), programEnv, stdout, stderr)
	if err != nil {
		if why := s.why(ctx, l, gone); why != "" {
			return nil, why, nil
		}
		return nil, "", fmt.Errorf("start the program in the sandbox %s: %w", l.sandbox, err)
	}
	defer r.stop()
	timer := time.NewTimer(lim.Timeout)
	defer timer.Stop()
	var (
		end      exit
		timedOut bool
	)
	select {
	case end = <-r.done:
	case <-timer.C:
		timedOut = true
		if err := p.kill(ctx, r.pid); err != nil {
			s.log.WarnContext(ctx, "sandbox: could not kill the program past its timeout; deleting the claim ends it", "sandbox", l.sandbox, "err", err)
		}
		select {
		case end = <-r.done:
		case <-time.After(killGrace):
			r.stop()
			end = <-r.done
		}
	case why := <-gone:
		r.stop()
		<-r.done
		return sandbox.Captured(stdout, stderr), why, nil
	case <-ctx.Done():
		// Stop, or the caller gave up: kill the program now; deleting
		// the claim would end it too, a little later.
		p.kill(context.WithoutCancel(ctx), r.pid)
		r.stop()
		<-r.done
		return nil, "", context.Cause(ctx)
	}
	res = sandbox.Captured(stdout, stderr)
	if !timedOut && (end.err != nil || end.code < 0) {
		// The stream broke, or something other than the program's end
		// and this side's kill ended the launcher: the pod's end?
		if why := s.why(ctx, l, gone); why != "" {
			return res, why, nil
		}
		if end.err != nil {
			return nil, "", fmt.Errorf("the sandbox %s's runtime broke off the run: %w", l.sandbox, end.err)
		}
	}
	res.ExitCode = end.code
	last := remote.LastLine(res.Stderr)
	switch {
	case timedOut:
		res.Limit, res.ExitCode = sandbox.LimitTimeout, exitKilled
	case end.code < 0 || end.code == exitKilled:
		// Nothing in the pod but the kernel's OOM killer sends SIGKILL:
		// the timeout's kill is this side's, and counted above.
		res.Limit, res.ExitCode = sandbox.LimitMemory, exitKilled
		res.AddCap(sandbox.CapMemory)
	case end.code != 0 && refusedMemory(last):
		res.Limit = sandbox.LimitMemory
		res.AddCap(sandbox.CapMemory)
	case end.code == exitCPU:
		res.Limit = sandbox.LimitCPU
	case end.code != 0 && strings.Contains(string(last), "File too large"):
		res.Limit = sandbox.LimitDisk
	}
	return res, "", nil
}

// Exit codes of a program killed by a signal, as a shell reports them.
const (
	exitKilled = 128 + 9  // SIGKILL: the timeout, the memory limit
	exitCPU    = 128 + 24 // SIGXCPU: the CPU-time limit
)

// refusedMemory reports whether a program's last line of stderr says that
// an allocation was refused: RLIMIT_DATA refuses what passes the run's
// memory limit (MemoryError, or ENOMEM from mmap).
func refusedMemory(line []byte) bool {
	s := string(line)
	return strings.Contains(s, "MemoryError") || strings.Contains(s, "[Errno 12] Cannot allocate memory")
}

// why says whether the lease's sandbox went away: what the watch saw, or
// else what the API server says now. "" means it is still there.
func (s *Sandbox) why(ctx context.Context, l *lease, gone <-chan string) string {
	select {
	case why := <-gone:
		return why
	default:
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	u, err := s.k8s.dyn.Resource(sandboxesResource).Namespace(s.k8s.namespace).Get(ctx, l.sandbox, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "was deleted"
	case err != nil:
		return ""
	}
	var sb sandboxObject
	if fromUnstructured(u, &sb) == nil && !isReady(sb.Status.Conditions) {
		return "stopped being ready (" + describeReady(sb.Status.Conditions) + ")"
	}
	return ""
}

// goneResult is the result of a run whose sandbox went away: what the
// program printed before, the exit of a killed program, and Gone, which
// says what happened (each front end shows it in the run's verdict).
func (s *Sandbox) goneResult(res *sandbox.Result, l *lease, why string, lim sandbox.Limits, start time.Time) *sandbox.Result {
	if res == nil {
		res = &sandbox.Result{}
	}
	s.log.Warn("sandbox: the sandbox went away during the run", "sandbox", l.sandbox, "why", why)
	res.ExitCode = exitKilled
	res.Gone = fmt.Sprintf("the Kubernetes sandbox %s %s", l.sandbox, why)
	res.Bound(lim)
	res.Duration = time.Since(start)
	return res
}

// fail wraps a machinery failure; a cancelled caller gets its own cause.
func (s *Sandbox) fail(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("sandbox: %s: %w", op, context.Cause(ctx))
	}
	return &sandbox.Error{Op: op, Err: err}
}

// Close releases idle connections. Runs in flight are not affected: each
// deletes its own claim before it returns.
func (s *Sandbox) Close() error {
	s.k8s.http.CloseIdleConnections()
	return nil
}
