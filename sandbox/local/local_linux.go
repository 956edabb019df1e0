//go:build linux && cgo && (amd64 || arm64)

package local

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// The program's user inside the sandbox, and the unprivileged host user it
// maps to when the bot runs as root. (Run by another user, the bot maps the
// sandbox user to itself: the kernel allows nothing else.)
const (
	sandboxID = 1000
	nobodyID  = 65534
)

// hostGrace is how long past the timeout the host waits for init to end the
// run itself before killing the whole sandbox from outside.
const hostGrace = 5 * time.Second

// Sandbox is the local backend. It is safe for concurrent use.
type Sandbox struct {
	cfg    Config
	log    *slog.Logger
	python *Python
	mounts []hostMount
	// initMounts is mounts as init sees them.
	initMounts []initMount
	env        []string
	etc        []sandbox.File
	// tmpFiles are caches built once at start-up and placed in every
	// sandbox's /tmp (matplotlib's font list); cachesDone is closed when
	// they are built (or will not be).
	tmpFiles   atomic.Pointer[[]sandbox.File]
	cachesDone chan struct{}
	cgroups    *cgroups
	sem        chan struct{}
	hostID     int // host uid and gid the sandbox user maps to
	// canCloneTrees: the host may clone mount trees (open_tree needs
	// CAP_SYS_ADMIN); else init bind-mounts paths itself.
	canCloneTrees bool

	zmu    sync.Mutex
	zygote *zygote // started on first use, restarted if it dies
	closed bool    // by Close
	// early is the zygote New started ahead (OneShot), until forkInit or
	// Close takes it.
	early chan startedZygote

	refill   chan struct{} // asks keepReady to top the pool up (and warm it)
	stop     chan struct{} // closed by Close
	stopOnce sync.Once

	// preload are the modules of Config.Preload the interpreter has;
	// bootstrap imports them (warm.go) and warmMsg starts it.
	preload   []string
	missing   []string        // the others
	stdlib    map[string]bool // the standard library's modules, for take
	bootstrap string
	runner    string // runs every cold run's code (sandbox.StateRunner)
	keeps     bool   // runs may keep state (not OneShot)
	warmMsg   []byte
	maxWarm   int
	warmIdle  time.Duration // no run for this long before a warm-up
	// alwaysWarm (tests) gives warm sandboxes to runs that import only
	// the standard library too.
	alwaysWarm bool

	pmu       sync.Mutex
	pool      []*ready      // sandboxes built ahead, each for one run
	inflight  int           // runs in flight
	idleAt    time.Time     // when the last run ended
	warming   *ready        // the warm-up under way, in the pool
	warmErr   error         // why warming failed, turning it off
	warmStats warmEvent     // the last warm-up that got ready
	warmCount int           // warm-ups that got ready
	warmNews  chan struct{} // closed when a warm-up gets ready or fails

	seccomp []unix.SockFilter            // the program's filter
	setup   atomic.Pointer[encodedSetup] // the setup message, encoded

	liveCgroups atomic.Int64 // for tests: runs' cgroups not yet removed
	watchCPU    atomic.Int64 // for benchmarks: nanoseconds of CPU time the memory watchers took
	lastCgroup  atomic.Value // for tests: []string, the last run's cgroup directories
}

// hostMount is one entry of the sandbox's root: for trees, Source is the
// host path cloned and Attr the mount attributes it gets.
type hostMount struct {
	initMount
	Source string
	Attr   uint64
}

// New checks that this host can create sandboxes and resolves the
// interpreter. It fails, saying why and what to do, when it cannot; it never
// falls back to running code unsandboxed.
func New(ctx context.Context, cfg Config) (_ *Sandbox, err error) {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = runtime.NumCPU()
	}
	if err := CheckPreload(cfg.Preload); err != nil {
		return nil, err
	}
	var early chan startedZygote
	if cfg.OneShot {
		// The run follows at once: start the helper process (an exec of
		// this binary, a few milliseconds) while the rest is resolved.
		early = make(chan startedZygote, 1)
		go func() {
			z, err := startZygote()
			early <- startedZygote{z, err}
		}()
		defer func() {
			if err != nil {
				go closeStarted(early)
			}
		}()
	}
	cfg.Limits = cfg.Limits.WithDefaults()
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	py, err := resolvePython(ctx, cfg.Python, cfg.ProbeCache)
	if err != nil {
		return nil, err
	}
	s := &Sandbox{
		cfg:        cfg,
		log:        log,
		python:     py,
		sem:        make(chan struct{}, cfg.Concurrency),
		hostID:     os.Geteuid(),
		cachesDone: make(chan struct{}),
		refill:     make(chan struct{}, 1),
		stop:       make(chan struct{}),
		early:      early,
		maxWarm:    maxWarm(cfg.Concurrency),
		warmIdle:   defaultWarmIdle,
		warmNews:   make(chan struct{}),
	}
	s.lastCgroup.Store([]string(nil))
	// Root maps the sandbox user to nobody, if it may map other ids
	// (CAP_SETUID and CAP_SETGID, which Docker's --user 0 keeps); anyone
	// else maps the sandbox user to itself. Cloning mount trees (for an
	// interpreter under a directory nobody may read) needs CAP_SYS_ADMIN,
	// which Docker drops; without it init binds the paths itself.
	root := os.Geteuid() == 0
	if root && hasCaps(unix.CAP_SETUID, unix.CAP_SETGID) {
		s.hostID = nobodyID
	}
	s.canCloneTrees = root && hasCaps(unix.CAP_SYS_ADMIN)
	s.seccomp = seccompFilter()
	if err := s.plan(); err != nil {
		return nil, err
	}
	s.runner, s.keeps = sandbox.StateRunner(stateDir), !cfg.OneShot
	// Root with CAP_SYS_ADMIN makes its own groups; anyone else needs a
	// delegated cgroup v2 group.
	if s.cgroups, err = detectCgroups(realCgroupHost(), s.canCloneTrees); err != nil {
		log.Warn("sandbox: no cgroup for the runs; memory is bounded by the sandbox's watcher and rlimits, processes by RLIMIT_NPROC, and the CPU quota (SANDPIPER_SANDBOX_CPUS) is not enforced", "reason", err)
		// Without a memory cgroup a process's address space is bounded
		// (RLIMIT_AS), and each BLAS thread reserves a buffer of about 64
		// MB: one thread leaves the program most of it.
		for i, kv := range s.env {
			if k, _, _ := strings.Cut(kv, "="); k == "OPENBLAS_NUM_THREADS" || k == "OMP_NUM_THREADS" {
				s.env[i] = k + "=1"
			}
		}
	} else if !s.cgroups.hasCPU() {
		log.Warn("sandbox: no cgroup cpu controller; the CPU quota (SANDPIPER_SANDBOX_CPUS) is not enforced", "cgroups", s.cgroups.String())
	}

	if cfg.OneShot {
		// One run is to follow at once: it is its own test, and a
		// sandbox built ahead for a second run would only compete with
		// it. Nothing is preloaded: the run starts cold.
		close(s.cachesDone)
		log.Debug("sandbox: local backend ready for one run", "python", py.Executable, "version", py.Version,
			"cgroups", s.cgroups.String(), "landlock_abi", landlockABI())
		return s, nil
	}
	// Prove it works before anyone relies on it, and learn which of the
	// modules to preload the interpreter has, in the sandbox.
	code := "print(6 * 7)"
	if len(cfg.Preload) > 0 {
		code += "\n" + probePreload(cfg.Preload)
	}
	res, err := s.Run(ctx, sandbox.Request{Code: code, Limits: sandbox.Limits{Timeout: 30 * time.Second}})
	if err != nil {
		s.Close()
		return nil, explainStartFailure(err)
	}
	got, found, _ := strings.Cut(strings.TrimSpace(string(res.Stdout)), "\n")
	if got != "42" || res.ExitCode != 0 {
		s.Close()
		return nil, fmt.Errorf("sandbox: self-test printed %q (exit %d), want 42; stderr: %s", got, res.ExitCode, bytes.TrimSpace(res.Stderr))
	}
	if len(cfg.Preload) > 0 {
		var probe struct{ Found, Stdlib []string }
		if err := json.Unmarshal([]byte(found), &probe); err != nil {
			s.Close()
			return nil, fmt.Errorf("sandbox: self-test: looking for the modules to preload printed %q: %v", found, err)
		}
		s.preload = probe.Found
		if len(probe.Stdlib) > 0 {
			s.stdlib = make(map[string]bool, len(probe.Stdlib))
			for _, m := range probe.Stdlib {
				s.stdlib[m] = true
			}
		}
		for _, m := range cfg.Preload {
			if !slices.Contains(s.preload, m) {
				s.missing = append(s.missing, m)
			}
		}
		if len(s.missing) > 0 {
			log.Warn("sandbox: modules to preload that the interpreter does not have are left out", "modules", strings.Join(s.missing, ","))
		}
		if len(s.preload) > 0 {
			s.bootstrap = bootstrap(s.preload)
			s.warmMsg = encodeWarm(cfg.Limits)
			s.setup.Store(nil) // encode it again, with the bootstrap
		}
	}
	if cfg.PrepareCaches {
		go func() {
			defer close(s.cachesDone)
			files := s.warmCaches(context.WithoutCancel(ctx))
			s.tmpFiles.Store(&files)
			s.drainPool() // the sandboxes built before have no caches
			s.wantMore()
		}()
	} else {
		close(s.cachesDone)
	}
	go s.keepReady()
	s.wantMore()
	log.Info("sandbox: local backend ready", "python", py.Executable, "version", py.Version,
		"cgroups", s.cgroups.String(), "landlock_abi", landlockABI(), "concurrency", cfg.Concurrency,
		"self_test", res.Duration.Round(time.Microsecond), "preload", strings.Join(s.preload, ","))
	return s, nil
}

// warmCaches builds, in a sandbox, what libraries would otherwise rebuild in
// every run: today matplotlib's font list (a few hundred milliseconds per
// plot). It returns the files to place under /tmp; none if matplotlib is
// not installed or the build fails (each run then builds its own).
func (s *Sandbox) warmCaches(ctx context.Context) []sandbox.File {
	const code = `import importlib.util, os, shutil
if importlib.util.find_spec("matplotlib"):
    import matplotlib.font_manager
    shutil.copytree(os.environ["MPLCONFIGDIR"], "cache/.matplotlib")
`
	res, err := s.Run(ctx, sandbox.Request{Code: code, Limits: sandbox.Limits{Timeout: time.Minute}})
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("exit %d: %s", res.ExitCode, lastLine(res.Stderr))
	}
	if err != nil {
		s.log.Warn("sandbox: could not prepare matplotlib's font cache; plots will be slower", "err", err)
		return nil
	}
	var files []sandbox.File
	for _, f := range res.Files {
		if name, ok := strings.CutPrefix(f.Name, "cache/"); ok {
			files = append(files, sandbox.File{Name: name, Data: f.Data})
		}
	}
	return files
}

// hasCaps reports whether the process has every one of caps in its
// effective set.
func hasCaps(caps ...int) bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	for _, c := range caps {
		if data[c/32].Effective&(1<<(c%32)) == 0 {
			return false
		}
	}
	return true
}

// landlockABI returns the kernel's Landlock ABI version, 0 without Landlock
// (for the start-up log; init applies what the kernel has).
func landlockABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// Enforcement says how the run's memory, processes and CPUs are bounded
// on this host, for doctor: by cgroups, or without them.
func (s *Sandbox) Enforcement() string {
	if s.cgroups == nil {
		return "no cgroup: memory bounded per run by the sandbox's watcher and per process by rlimits, processes by RLIMIT_NPROC; the CPU quota (SANDPIPER_SANDBOX_CPUS) is not enforced"
	}
	if !s.cgroups.hasCPU() {
		return "cgroup " + s.cgroups.String() + ": memory and processes bounded; no cpu controller, so the CPU quota (SANDPIPER_SANDBOX_CPUS) is not enforced"
	}
	return fmt.Sprintf("cgroup %s: memory, processes and %s bounded per run", s.cgroups.String(), sandbox.FormatCPUs(s.cfg.Limits.CPUs))
}

// Info reports the backend's limits, as a run gets them, and what this
// host lets it enforce: without a cgroup with the cpu controller, not the
// CPU quota; a sandbox for one run (OneShot) keeps no state.
func (s *Sandbox) Info() sandbox.Info {
	info := sandbox.Info{Backend: sandbox.BackendLocal, Limits: s.cfg.Limits, KeepsState: s.keeps}
	switch {
	case s.cgroups == nil:
		info.Unenforced = append(info.Unenforced, sandbox.Unenforced{Field: "CPUs", Why: "no cgroup on this host: no CPU quota"})
	case !s.cgroups.hasCPU():
		info.Unenforced = append(info.Unenforced, sandbox.Unenforced{Field: "CPUs", Why: "the cgroup has no cpu controller: no CPU quota"})
	}
	return info
}

// Python returns the resolved interpreter.
func (s *Sandbox) Python() Python { return *s.python }

// explainStartFailure turns a failure to create the namespaces into advice.
func explainStartFailure(err error) error {
	var se *sandbox.Error
	if !errors.As(err, &se) || (se.Op != "start" && se.Op != "setup") {
		return fmt.Errorf("sandbox: self-test failed: %w", err)
	}
	why := "this host does not let the bot create user, PID, mount and network namespaces"
	if se.Op == "setup" {
		why = "the sandbox's namespaces were created but its file system could not be built"
		if strings.Contains(se.Err.Error(), "/proc") {
			why = "the kernel refused a fresh /proc in the sandbox, which happens when the container's /proc has masked paths"
		}
	} else if strings.Contains(se.Err.Error(), "map ids") && os.Geteuid() == 0 && !hasCaps(unix.CAP_SETUID, unix.CAP_SETGID, unix.CAP_SETFCAP) {
		return fmt.Errorf("sandbox: cannot create a sandbox: the bot runs as root without CAP_SETUID, CAP_SETGID and CAP_SETFCAP, "+
			"so it may not map the sandbox's user (%v). Run it as a non-root user, or keep those capabilities "+
			"(Docker keeps them unless --cap-drop removes them). Code is never run unsandboxed", se.Err)
	} else if b, rerr := os.ReadFile("/proc/sys/user/max_user_namespaces"); rerr == nil && strings.TrimSpace(string(b)) == "0" {
		why = "user namespaces are disabled (/proc/sys/user/max_user_namespaces is 0)"
	} else if b, rerr := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); rerr == nil && strings.TrimSpace(string(b)) == "0" && !hasCaps(unix.CAP_SYS_ADMIN) {
		why = "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone=0)"
	}
	return fmt.Errorf("sandbox: cannot create a sandbox: %s (%v). "+
		"In Docker, run the container with --security-opt seccomp=unconfined --security-opt apparmor=unconfined "+
		"--security-opt systempaths=unconfined (or --privileged); on a host, enable user namespaces (sysctl user.max_user_namespaces=15000, "+
		"kernel.unprivileged_userns_clone=1, kernel.apparmor_restrict_unprivileged_userns=0); "+
		"or choose another backend (SANDPIPER_SANDBOX=vercel). Code is never run unsandboxed", why, se.Err)
}

// plan decides, once, what the sandbox's root holds.
func (s *Sandbox) plan() error {
	const ro = unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV
	var ms []hostMount
	add := func(hostPath, target string, attr uint64) error {
		fi, err := os.Lstat(hostPath)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			link, err := os.Readlink(hostPath)
			if err != nil {
				return fmt.Errorf("sandbox: %w", err)
			}
			ms = append(ms, hostMount{initMount: initMount{Kind: mountSymlink, Target: target, Link: link}})
			return nil
		}
		ms = append(ms, s.treeMount(hostPath, target, !fi.IsDir(), attr))
		return nil
	}
	for _, d := range []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		if err := add(d, d, ro); err != nil {
			return err
		}
	}
	// Only what the interpreter and common libraries read from /etc.
	for _, f := range []string{"ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime",
		"matplotlibrc", "fonts", "mime.types", "ssl"} {
		if err := add("/etc/"+f, "/etc/"+f, ro); err != nil {
			return err
		}
	}
	// The interpreter's own install, where it lives outside /usr.
	covered := func(p string) bool {
		for _, m := range ms {
			if (m.Kind == mountTree || m.Kind == mountBind) && (p == m.Target || strings.HasPrefix(p, m.Target+"/")) {
				return true
			}
		}
		return false
	}
	// Only the install: its prefixes, site and standard-library
	// directories, and what of sys.path (in isolated mode) lies under them.
	dirs := append([]string{filepath.Dir(s.python.Executable)}, s.python.Prefixes...)
	dirs = append(dirs, s.python.Site...)
	dirs = append(dirs, s.python.Path...)
	if len(s.python.Outside) > 0 {
		s.log.Warn("sandbox: sys.path entries outside the interpreter's install are not visible in the sandbox; install those packages into it",
			"dirs", s.python.Outside)
	}
	for _, d := range dirs {
		d = filepath.Clean(d)
		if covered(d) {
			continue
		}
		for _, bad := range []string{"/", "/proc", "/dev", "/mnt", "/tmp", "/etc", "/sys"} {
			if d == bad || strings.HasPrefix(d, bad+"/") && bad != "/" {
				return fmt.Errorf("sandbox: python directory %s cannot be made visible in the sandbox (it is under %s); install Python elsewhere or set SANDPIPER_PYTHON", d, bad)
			}
		}
		if err := add(d, d, ro); err != nil {
			return err
		}
	}
	ms = append(ms, hostMount{initMount: initMount{Kind: mountDir, Target: "/dev"}})
	for _, dev := range []string{"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom"} {
		ms = append(ms, s.treeMount(dev, dev, true, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC))
	}
	s.mounts = ms
	for _, m := range ms {
		s.initMounts = append(s.initMounts, m.initMount)
	}

	pathDirs := []string{"/usr/local/bin", "/usr/bin", "/bin"}
	if bin := filepath.Dir(s.python.Executable); !contains(pathDirs, bin) {
		pathDirs = append([]string{bin}, pathDirs...)
	}
	threads := strconv.Itoa(min(runtime.NumCPU(), 4))
	s.env = []string{
		"PATH=" + strings.Join(pathDirs, ":"),
		"HOME=/tmp",
		"LANG=C.UTF-8",
		"TMPDIR=/tmp",
		"USER=sandbox",
		"PYTHONUNBUFFERED=1", // output written before a timeout is kept
		"PYTHONDONTWRITEBYTECODE=1",
		"MPLBACKEND=Agg",
		"MPLCONFIGDIR=/tmp/.matplotlib",
		"OPENBLAS_NUM_THREADS=" + threads,
		"OMP_NUM_THREADS=" + threads,
	}
	// Hardware workarounds some hosts need for correct BLAS results.
	for _, k := range []string{"OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"} {
		if v, ok := os.LookupEnv(k); ok {
			s.env = append(s.env, k+"="+v)
		}
	}
	s.etc = []sandbox.File{
		{Name: "passwd", Data: []byte("root:x:0:0:root:/:/usr/sbin/nologin\nsandbox:x:1000:1000:sandbox:/tmp:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")},
		{Name: "group", Data: []byte("root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n")},
		{Name: "hosts", Data: []byte("127.0.0.1\tlocalhost sandbox\n::1\tlocalhost sandbox\n")},
		{Name: "hostname", Data: []byte("sandbox\n")},
		{Name: "nsswitch.conf", Data: []byte("passwd: files\ngroup: files\nhosts: files\n")},
	}
	return nil
}

// treeMount makes hostPath visible at target. Run as root, the host clones
// the mount tree and hands it to init (init's user cannot even reach paths
// such as /root/.pyenv); otherwise cloning is not allowed, and init binds
// the path itself, with the bot's own access to it.
func (s *Sandbox) treeMount(hostPath, target string, isFile bool, attr uint64) hostMount {
	if s.canCloneTrees {
		return hostMount{initMount: initMount{Kind: mountTree, Target: target, IsFile: isFile}, Source: hostPath, Attr: attr}
	}
	return hostMount{initMount: initMount{Kind: mountBind, Target: target, IsFile: isFile, Source: hostPath, Attr: attr}}
}

// Run runs req in a fresh sandbox. It waits for a free slot first (see
// Config.Concurrency), honouring ctx. A program that fails, times out or
// exceeds a limit is reported in the Result; an error means the sandbox
// could not be created or ctx ended the run.
func (s *Sandbox) Run(ctx context.Context, req sandbox.Request) (*sandbox.Result, error) {
	if err := req.Check(req.Limits.Or(s.cfg.Limits)); err != nil {
		return nil, err
	}
	if req.KeepState && !s.keeps {
		return nil, errors.New("sandbox: this sandbox runs once (sandpiper exec) and keeps no state")
	}
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("sandbox: waiting for a free slot: %w", context.Cause(ctx))
	}
	defer func() { <-s.sem }()
	res, err := s.run(ctx, req)
	if res != nil {
		res.Bound(req.Limits.Or(s.cfg.Limits))
	}
	if err != nil && s.cfg.OneShot {
		// No self-test ran: say what to do, as New would have.
		var se *sandbox.Error
		if errors.As(err, &se) && (se.Op == "start" || se.Op == "setup") {
			err = explainStartFailure(err)
		}
	}
	return res, err
}

func (s *Sandbox) run(ctx context.Context, req sandbox.Request) (res *sandbox.Result, err error) {
	lim := req.Limits.Or(s.cfg.Limits)
	start := time.Now()
	s.runStarted()
	defer s.runEnded()
	w, err := s.take(lim, req.Code, req.StateSize() > 0)
	if err != nil {
		return nil, err
	}
	// Once the result is in, every process of the sandbox is dead; the
	// rest of the teardown (init's exit, the cgroup) need not delay it.
	defer func() { go w.discard(s) }()
	if w.cg != nil {
		s.lastCgroup.Store(w.cg.dirs)
	}
	// The group was made with the default limits; a request with its own
	// sets them now.
	if def := s.cfg.Limits; w.cg != nil && (lim.Memory != def.Memory || lim.Processes != def.Processes || lim.CPUs != def.CPUs) {
		if err := w.cg.setLimits(lim.Memory, lim.Processes+1, lim.CPUs); err != nil { // init counts
			return nil, &sandbox.Error{Op: "cgroup", Err: err}
		}
	}
	// A sandbox that warmed has used its cgroup already: what the run
	// did is what its counters say past their values now, and its CPU
	// quota starts afresh.
	var base cgroupEvents
	if w.cg != nil && w.warmed {
		if err := w.cg.setCPU(lim.CPUs); err != nil {
			return nil, &sandbox.Error{Op: "cgroup", Err: err}
		}
		base = w.cg.events()
		w.cg.resetPeak()
	}

	stdout := &sandbox.CapBuffer{Max: lim.Output}
	stderr := &sandbox.CapBuffer{Max: lim.Output}
	// The state goes to the sandbox first, and nothing here holds it
	// after: the host keeps at most the state the run saves.
	state, stateFrom, stateLen := req.State, req.StateFrom, req.StateSize()
	req.State, req.StateFrom = nil, nil
	go func() {
		if req.KeepState {
			w.reqW.Write(encodeStateHeader(lim.StateSize, int(stateLen)))
			if stateFrom != nil {
				if n, err := io.CopyN(w.reqW, stateFrom, stateLen); err != nil {
					// Init sees the message cut short and fails the run.
					s.log.Error("sandbox: reading the state to send failed", "err", err, "sent", n)
					w.reqW.Close()
					return
				}
			} else {
				w.reqW.Write(state)
			}
			state, stateFrom = nil, nil
		}
		w.reqW.Write(encodeRun(req.Code, req.Files, lim))
		w.reqW.Close()
	}()
	var readers sync.WaitGroup
	readers.Go(func() { io.Copy(stdout, w.stdoutR) })
	readers.Go(func() { io.Copy(stderr, w.stderrR) })
	resultc := make(chan initResultOrErr, 1)
	go func() {
		r, err := decodeResult(w.resultR, lim)
		io.Copy(io.Discard, w.resultR)
		resultc <- initResultOrErr{r, err}
	}()

	backstop := time.NewTimer(lim.Timeout + hostGrace)
	defer backstop.Stop()
	killedByHost := false
	sent := time.Now()
	var ir initResultOrErr
	select {
	case ir = <-resultc:
	case <-ctx.Done():
		w.kill()
		<-w.exited
		readers.Wait()
		return nil, fmt.Errorf("sandbox: run: %w", context.Cause(ctx))
	case <-backstop.C:
		// init did not end the run in time: kill the whole sandbox.
		killedByHost = true
		w.kill()
		<-w.exited
		ir = <-resultc
	}
	exited := time.Now()
	if ir.err != nil {
		// init died without a result: make sure nothing of it is left
		// before reading the streams to their end.
		w.kill()
		<-w.exited
	}
	readers.Wait()
	res = sandbox.Captured(stdout, stderr)
	res.Duration = time.Since(start)
	if ir.err != nil {
		if killedByHost {
			res.Limit, res.ExitCode = sandbox.LimitTimeout, 128+int(unix.SIGKILL)
			if req.KeepState {
				res.State = sandbox.ParseState(nil, nil) // nothing saved
			}
			return res, nil
		}
		return nil, &sandbox.Error{Op: "wait", Err: fmt.Errorf("no result from the sandbox's init: %w", ir.err)}
	}
	if ir.r.Err != "" {
		return nil, &sandbox.Error{Op: "setup", Err: errors.New(ir.r.Err)}
	}
	r, cg := ir.r, w.cg
	s.log.Debug("sandbox: run", "exec", r.Started, "program_end", r.Ended, "result", r.Reported,
		"sent", sent.Sub(start), "exited", exited.Sub(start), "total", time.Since(start), "memory_watch_cpu", r.MemoryWatch, "memory_watch_killed_at", r.MemoryKilled)
	s.watchCPU.Add(int64(r.MemoryWatch))
	res.ExitCode = r.ExitCode
	res.Warm = r.Warm
	if req.KeepState {
		res.State = sandbox.ParseState(r.StateReport, r.State)
	}
	res.Files, res.FilesOmitted = r.Files, r.Omitted
	if r.Capped {
		res.AddCap(sandbox.CapResultList)
	}
	switch {
	case r.TimedOut:
		res.Limit = sandbox.LimitTimeout
	case r.MemoryKilled > 0 || cg != nil && cg.oomKills() > base.oomKills:
		// init's watcher ended the run, or the cgroup's OOM killer
		// killed one of its processes (the program may have gone on).
		res.Limit = sandbox.LimitMemory
	case cg == nil && r.Exited && r.ExitCode != 0 && refusedMemory(lastLine(res.Stderr)):
		res.Limit = sandbox.LimitMemory
	case r.Signal == int(unix.SIGXCPU):
		res.Limit = sandbox.LimitCPU
	case r.DiskFull:
		res.Limit = sandbox.LimitDisk
	case cg != nil && cg.pidsMaxHits() > base.pidsMax:
		res.Limit = sandbox.LimitProcesses
	}
	if cg != nil {
		res.MemoryPeak = cg.memoryPeak()
		if cg.throttles() > base.throttled {
			res.AddCap(sandbox.CapCPUQuota)
		}
	}
	if res.Limit == sandbox.LimitMemory {
		res.AddCap(sandbox.CapMemory)
	}
	if r.RefusedSockets > 0 {
		res.AddCap(sandbox.CapSocketFamily)
		s.log.Debug("sandbox: socket families refused", "calls", r.RefusedSockets)
	}
	return res, nil
}

// refusedMemory reports whether a program's last line of stderr says that
// an allocation was refused: without a memory cgroup, RLIMIT_AS refuses
// what would pass a process's share (MemoryError, or ENOMEM from mmap).
func refusedMemory(line []byte) bool {
	return bytes.Contains(line, []byte("MemoryError")) || bytes.Contains(line, []byte("[Errno 12] Cannot allocate memory"))
}

// forkInit has the zygote start an init with files as its descriptors
// 0, 1, 2, 3, ...; it restarts a zygote that has died.
func (s *Sandbox) forkInit(files []*os.File) (*os.File, error) {
	for attempt := 0; ; attempt++ {
		s.zmu.Lock()
		if s.closed {
			s.zmu.Unlock()
			return nil, errClosed
		}
		if s.zygote == nil {
			z, err := s.startZygote()
			if err != nil {
				s.zmu.Unlock()
				return nil, err
			}
			s.zygote = z
		}
		z := s.zygote
		s.zmu.Unlock()
		pidfd, err := z.fork(s.hostID, files)
		var se *startError
		if err == nil || errors.As(err, &se) || attempt > 0 {
			return pidfd, err
		}
		s.log.Warn("sandbox: zygote failed; restarting it", "err", err)
		s.zmu.Lock()
		if s.zygote == z {
			s.zygote = nil
			go z.close(true)
		}
		s.zmu.Unlock()
	}
}

// Close stops the helper process and the sandboxes kept ready. Runs in
// flight finish; later runs fail.
func (s *Sandbox) Close() error {
	s.zmu.Lock()
	s.closed = true
	s.zmu.Unlock()
	s.stopPool()
	s.zmu.Lock()
	defer s.zmu.Unlock()
	if s.early != nil {
		go closeStarted(s.early)
		s.early = nil
	}
	if s.zygote != nil {
		// A one-shot process exits next, and its helper with it
		// (SIGKILL at its parent's death): not waiting for it saves the
		// run a millisecond or two.
		s.zygote.close(!s.cfg.OneShot)
		s.zygote = nil
	}
	return nil
}

// startedZygote is what starting a zygote ahead gave.
type startedZygote struct {
	z   *zygote
	err error
}

// startZygote returns the zygote New started ahead, if it did and it has
// not been used, else starts one. The caller holds s.zmu.
func (s *Sandbox) startZygote() (*zygote, error) {
	if s.early != nil {
		sz := <-s.early
		s.early = nil
		return sz.z, sz.err
	}
	return startZygote()
}

// closeStarted stops the zygote started ahead on c, once it has started.
func closeStarted(c chan startedZygote) {
	if sz := <-c; sz.z != nil {
		sz.z.close(true)
	}
}

var errClosed = errors.New("sandbox: closed")

type initResultOrErr struct {
	r   initResult
	err error
}

func lastLine(b []byte) []byte {
	b = bytes.TrimRight(b, "\n")
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		return b[i+1:]
	}
	return b
}

func runID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
