package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

func TestRunFilesInAndOut(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, poolOptions{replicas: 2})
	s := ns.backend(t, nil)
	res, err := s.Run(t.Context(), sandbox.Request{
		Code: `import os, pathlib
rows = pathlib.Path("data.csv").read_text().splitlines()
print("rows", len(rows), "in", os.getcwd())
pathlib.Path("out").mkdir()
pathlib.Path("out/sum.txt").write_text(str(sum(int(r) for r in rows)))
pathlib.Path("notes/a.txt").write_text("changed")
`,
		Files: []sandbox.File{
			{Name: "data.csv", Data: []byte("1\n2\n3\n")},
			{Name: "notes/a.txt", Data: []byte("original")},
			{Name: "notes/b.txt", Data: []byte("left alone")},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(res.Stdout)), "rows 3 in "+sandbox.WorkDir; got != want || res.ExitCode != 0 {
		t.Fatalf("stdout %q, exit %d, stderr %q; want %q, exit 0", got, res.ExitCode, res.Stderr, want)
	}
	var names []string
	for _, f := range res.Files {
		names = append(names, f.Name+"="+string(f.Data))
	}
	// Unchanged inputs do not come back; changed and new files do.
	if want := []string{"notes/a.txt=changed", "out/sum.txt=6"}; !slices.Equal(names, want) {
		t.Errorf("files %q, want %q", names, want)
	}
	if c := ns.claims(t); len(c) != 0 {
		t.Errorf("claims left after the run: %q", c)
	}
	if got := testutil.ToFloat64(s.metrics.claims.WithLabelValues("cleaned")); got != 1 {
		t.Errorf("claims cleaned: %v, want 1", got)
	}
	if got := testutil.CollectAndCount(s.metrics.claimSeconds); got != 1 {
		t.Errorf("claim latencies observed: %d, want 1", got)
	}
}

func TestLimits(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, poolOptions{replicas: 3})
	s := ns.backend(t, nil)
	for _, test := range []struct {
		name   string
		code   string
		lim    sandbox.Limits
		limit  sandbox.Limit
		exit   int
		within time.Duration
	}{
		{"timeout", "import time\nprint('started', flush=True)\ntime.sleep(60)", sandbox.Limits{Timeout: time.Second}, sandbox.LimitTimeout, 137, 8 * time.Second},
		{"memory", "b = bytearray(1 << 30)\nprint(len(b))", sandbox.Limits{Memory: 64 << 20}, sandbox.LimitMemory, -1, 20 * time.Second},
		// A second of CPU time can take many of wall time on a loaded host.
		{"cpu", "while True: pass", sandbox.Limits{CPUTime: time.Second, Timeout: time.Minute}, sandbox.LimitCPU, 152, 50 * time.Second},
		{"exit", "import sys; sys.exit(3)", sandbox.Limits{}, sandbox.LimitNone, 3, 10 * time.Second},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			res, err := s.Run(t.Context(), sandbox.Request{Code: test.code, Limits: test.lim})
			if err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			if res.Limit != test.limit || (test.exit >= 0 && res.ExitCode != test.exit) {
				t.Errorf("limit %q, exit %d (stderr %q); want limit %q, exit %d", res.Limit, res.ExitCode, res.Stderr, test.limit, test.exit)
			}
			if test.limit == sandbox.LimitMemory && res.ExitCode == 0 {
				t.Errorf("exit 0 for a program stopped by the memory limit")
			}
			if took > test.within {
				t.Errorf("took %s, want at most %s", took, test.within)
			}
		})
	}
	t.Cleanup(func() {
		if c := ns.claims(t); len(c) != 0 {
			t.Errorf("claims left: %q", c)
		}
	})
}

func TestStop(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, poolOptions{replicas: 1})
	s := ns.backend(t, nil)
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := s.Run(ctx, sandbox.Request{Code: "import time\ntime.sleep(60)"})
		done <- err
	}()
	eventually(t, 20*time.Second, "the program started", func() bool {
		started, _ := fake.programs(ns.name)
		return started == 1
	})
	stopped := time.Now()
	stop()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run after Stop: %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run still running 10 s after Stop")
	}
	if took := time.Since(stopped); took > 5*time.Second {
		t.Errorf("Run returned %s after Stop", took)
	}
	if _, killed := fake.programs(ns.name); killed != 1 {
		t.Errorf("programs killed with SIGKILL: %d, want 1", killed)
	}
	if c := ns.claims(t); len(c) != 0 {
		t.Errorf("claims left after Stop: %q", c)
	}
}

func TestPoolEmpty(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, poolOptions{replicas: 0, coldDelay: "never"})
	s := ns.backend(t, func(c *Config) { c.ReadyTimeout = 2 * time.Second })
	start := time.Now()
	_, err := s.Run(t.Context(), sandbox.Request{Code: "print(1)"})
	took := time.Since(start)
	if !errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), "no sandbox became ready in 2 s") {
		t.Fatalf("Run with an empty pool: %v; want %q", err, "no sandbox became ready in 2 s")
	}
	if !strings.Contains(err.Error(), "warm pool sandpiper-python has 0 of 0 sandboxes ready") {
		t.Errorf("the error does not say how the pool stands: %v", err)
	}
	if took < 2*time.Second || took > 10*time.Second {
		t.Errorf("waited %s, want the ready timeout, 2 s", took)
	}
	eventually(t, 5*time.Second, "the claim deleted", func() bool { return len(ns.claims(t)) == 0 })
}

func TestColdStart(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, poolOptions{replicas: 0, coldDelay: "300ms"})
	s := ns.backend(t, nil)
	res, err := s.Run(t.Context(), sandbox.Request{Code: "print(6 * 7)"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(res.Stdout)); got != "42" {
		t.Errorf("stdout %q, want 42", got)
	}
}

func TestStartErrors(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, poolOptions{replicas: 0})
	for _, test := range []struct {
		name string
		edit func(*Config)
		is   error
		says string
	}{
		{"forbidden", func(c *Config) { c.Kubeconfig = kubeconfigFor(t, "someone-else") }, ErrForbidden,
			`User "someone-else" cannot get resource "sandboxwarmpools"`},
		{"no warm pool", func(c *Config) { c.WarmPool = "nope" }, ErrNoWarmPool, `no SandboxWarmPool "nope" in`},
		{"unreachable", func(c *Config) { c.Kubeconfig = unreachableKubeconfig(t) }, ErrUnreachable, "cannot reach the cluster at https://127.0.0.1:9"},
		{"no kubeconfig", func(c *Config) { c.Kubeconfig = t.TempDir() + "/missing" }, nil, "missing"},
	} {
		t.Run(test.name, func(t *testing.T) {
			cfg := ns.config(t)
			test.edit(&cfg)
			s, err := New(t.Context(), cfg)
			if err == nil {
				s.Close()
				t.Fatal("New succeeded")
			}
			if test.is != nil && !errors.Is(err, test.is) {
				t.Errorf("New: %v; want %v", err, test.is)
			}
			if !strings.Contains(err.Error(), test.says) {
				t.Errorf("New: %v; want it to say %q", err, test.says)
			}
		})
	}
}

// TestForbiddenRun has the bot lose its Role after start: the run's
// claim is refused, and the error says what to do.
func TestForbiddenRun(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, poolOptions{replicas: 1})
	s := ns.backend(t, nil)
	if err := admin.Resource(resources["RoleBinding"]).Namespace(ns.name).Delete(t.Context(), "sandpiper-sandboxes", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The API server's RBAC follows the binding's deletion a moment
	// later: all at once, so that a run after this makes nothing.
	eventually(t, 10*time.Second, "the Role's grants gone", func() bool {
		denied, err := s.k8s.denied(t.Context())
		return err == nil && len(denied) == len(needed)
	})
	_, err := s.Run(t.Context(), sandbox.Request{Code: "print(1)"})
	if !errors.Is(err, ErrForbidden) || !strings.Contains(err.Error(), "cannot create resource \"sandboxclaims\"") || !strings.Contains(err.Error(), "deploy/rbac.yaml") {
		t.Errorf("Run without the Role: %v", err)
	}
	if got := testutil.ToFloat64(s.metrics.claims.WithLabelValues("leaked")); got != 0 {
		t.Errorf("claims leaked: %v; a refused claim was never made", got)
	}
}

// TestMissingCRDs starts a control plane of its own, without
// agent-sandbox's CRDs.
func TestMissingCRDs(t *testing.T) {
	needCluster(t)
	t.Parallel()
	bare := &envtest.Environment{BinaryAssetsDirectory: testEnv.BinaryAssetsDirectory, ControlPlaneStartTimeout: 2 * time.Minute}
	if _, err := bare.Start(); err != nil {
		t.Fatal(err)
	}
	defer bare.Stop()
	cfg := Config{WarmPool: "sandpiper-python", Namespace: "default", Kubeconfig: kubeconfigIn(t, bare, "admin", "system:masters")}
	_, err := New(t.Context(), cfg)
	if !errors.Is(err, ErrNoCRDs) || !strings.Contains(err.Error(), "serves no sandboxclaims.extensions.agents.x-k8s.io") || !strings.Contains(err.Error(), "install agent-sandbox") {
		t.Errorf("New without the CRDs: %v", err)
	}
	checks := Doctor(t.Context(), cfg)
	if last := checks[len(checks)-1]; last.Name != "kubernetes CRDs" || last.OK || !strings.Contains(last.Detail, "sandboxes.agents.x-k8s.io") {
		t.Errorf("doctor's last check %+v; want the CRDs failing", last)
	}
}

func TestNoCluster(t *testing.T) {
	// Not parallel: it changes the environment clientcmd reads.
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	_, err := New(t.Context(), Config{WarmPool: "p"})
	if !errors.Is(err, ErrNoCluster) || !strings.Contains(err.Error(), "SANDPIPER_KUBERNETES_KUBECONFIG") {
		t.Errorf("New with no cluster: %v", err)
	}
}

// unreachableKubeconfig is a kubeconfig for a server that is not there.
func unreachableKubeconfig(t testing.TB) string {
	path := t.TempDir() + "/kubeconfig"
	os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:9"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u, namespace: x}}]
current-context: c
`), 0o600)
	return path
}

func TestSandboxDeletedMidRun(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, poolOptions{replicas: 1})
	s := ns.backend(t, nil)
	type outcome struct {
		res *sandbox.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := s.Run(t.Context(), sandbox.Request{Code: "import time\ntime.sleep(60)", Limits: sandbox.Limits{Timeout: 50 * time.Second}})
		done <- outcome{res, err}
	}()
	eventually(t, 20*time.Second, "the program started", func() bool {
		started, _ := fake.programs(ns.name)
		return started == 1
	})
	var name string
	eventually(t, 5*time.Second, "a claimed sandbox", func() bool {
		list, err := admin.Resource(sandboxesResource).Namespace(ns.name).List(t.Context(), metav1.ListOptions{LabelSelector: claimUIDLabel})
		if err != nil || len(list.Items) == 0 {
			return false
		}
		name = list.Items[0].GetName()
		return true
	})
	if err := admin.Resource(sandboxesResource).Namespace(ns.name).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case o := <-done:
		if o.err != nil {
			t.Fatalf("Run: %v; want a result saying the sandbox was deleted", o.err)
		}
		want := sandbox.Verdict{Kind: sandbox.VerdictGone, Exit: 137, Phrase: "the Kubernetes sandbox " + name + " was deleted during the run"}
		if got := o.res.Verdict(); got != want {
			t.Errorf("verdict %+v, want %+v", got, want)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run still waiting 15 s after its sandbox was deleted")
	}
	eventually(t, 5*time.Second, "the claim deleted", func() bool { return len(ns.claims(t)) == 0 })
}

// TestSandboxDeletedBeforeReady deletes a run's cold-starting sandbox
// before it is ready: agent-sandbox's claim controller starts another for
// the claim, and the run waits for that one instead of failing.
func TestSandboxDeletedBeforeReady(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, poolOptions{replicas: 0, coldDelay: "3s"})
	s := ns.backend(t, nil)
	type outcome struct {
		res *sandbox.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := s.Run(t.Context(), sandbox.Request{Code: "print(6 * 7)"})
		done <- outcome{res, err}
	}()
	var first *unstructured.Unstructured
	eventually(t, 10*time.Second, "the claim's sandbox, starting cold", func() bool {
		list, err := admin.Resource(sandboxesResource).Namespace(ns.name).List(t.Context(), metav1.ListOptions{LabelSelector: claimUIDLabel})
		if err != nil || len(list.Items) == 0 {
			return false
		}
		first = &list.Items[0]
		return true
	})
	if err := admin.Resource(sandboxesResource).Namespace(ns.name).Delete(t.Context(), first.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var o outcome
	select {
	case o = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Run still waiting 30 s after its sandbox was deleted")
	}
	if o.err != nil {
		t.Fatalf("Run: %v; want it to wait for the claim's next sandbox", o.err)
	}
	if got := strings.TrimSpace(string(o.res.Stdout)); got != "42" {
		t.Errorf("stdout %q, stderr %q; want 42", got, o.res.Stderr)
	}
	if started, _ := fake.programs(ns.name); started != 1 {
		t.Errorf("programs started: %d, want 1", started)
	}
}

// helperEnv makes the test binary a bot that starts a long run and is
// killed mid-run by TestBotKilledMidRun.
const helperEnv = "SANDPIPER_K8S_TEST_BOT"

func helperMain() int {
	var cfg Config
	cfg.Namespace, cfg.WarmPool, cfg.Kubeconfig = os.Getenv("NS"), os.Getenv("POOL"), os.Getenv("KUBECONFIG_FILE")
	cfg.GRPCPort, _ = strconv.Atoi(os.Getenv("GRPC_PORT"))
	cfg.RESTPort, _ = strconv.Atoi(os.Getenv("REST_PORT"))
	cfg.ReadyTimeout = 2 * time.Second
	s, err := New(context.Background(), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s.slack = 0
	_, err = s.Run(context.Background(), sandbox.Request{Code: "import time\ntime.sleep(60)", Limits: sandbox.Limits{Timeout: 4 * time.Second}})
	fmt.Fprintln(os.Stderr, "the run ended, which it should not have:", err)
	return 2
}

// TestBotKilledMidRun kills a bot (a process of its own) in the middle of
// a run: its claim, which nothing deletes now, ends at its shutdownTime
// (ready timeout + run timeout + slack: 2+4+0 s, and a second), as
// agent-sandbox's claim controller enforces it, and its
// sandbox with it.
func TestBotKilledMidRun(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, poolOptions{replicas: 1})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1", "NS="+ns.name, "POOL="+ns.pool, "KUBECONFIG_FILE="+ns.kubeconfig,
		"GRPC_PORT="+strconv.Itoa(fake.grpcPort), "REST_PORT="+strconv.Itoa(fake.restPort))
	cmd.Stderr = t.Output()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the bot's program started", func() bool {
		started, _ := fake.programs(ns.name)
		return started == 1
	})
	claims := ns.claims(t)
	if len(claims) != 1 {
		t.Fatalf("claims %q, want the bot's one", claims)
	}
	u, err := admin.Resource(claimsResource).Namespace(ns.name).Get(t.Context(), claims[0], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var c claim
	fromUnstructured(u, &c)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	killed := time.Now()
	lc := c.Spec.Lifecycle
	if lc == nil || lc.ShutdownTime == nil || lc.ShutdownPolicy != "Delete" {
		t.Fatalf("the claim's lifecycle is %+v; want a shutdownTime and the Delete policy", lc)
	}
	if left := time.Until(lc.ShutdownTime.Time); left > 8*time.Second {
		t.Errorf("the claim ends in %s: want about its run's lifetime, 7 s", left)
	}
	eventually(t, 15*time.Second, "the dead bot's claim deleted at its shutdownTime", func() bool { return len(ns.claims(t)) == 0 })
	if time.Now().Before(lc.ShutdownTime.Time) {
		t.Errorf("the claim was deleted %s before its shutdownTime", lc.ShutdownTime.Sub(time.Now()))
	}
	eventually(t, 5*time.Second, "the claim's sandbox deleted", func() bool {
		_, err := admin.Resource(sandboxesResource).Namespace(ns.name).Get(t.Context(), c.Status.Sandbox.Name, metav1.GetOptions{})
		return err != nil
	})
	t.Logf("claim deleted %s after the bot was killed", time.Since(killed).Round(time.Millisecond))
}

func TestConcurrentRuns(t *testing.T) {
	t.Parallel()
	const n = 20
	ns := newNamespace(t, poolOptions{replicas: 4, coldDelay: "200ms"})
	s := ns.backend(t, func(c *Config) { c.Concurrency = n })
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			res, err := s.Run(t.Context(), sandbox.Request{
				Code:  "import pathlib\nn = int(pathlib.Path('in.txt').read_text())\npathlib.Path('out.txt').write_text(str(n * n))\nprint(n)",
				Files: []sandbox.File{{Name: "in.txt", Data: []byte(strconv.Itoa(i))}},
			})
			switch {
			case err != nil:
				errs[i] = err
			case strings.TrimSpace(string(res.Stdout)) != strconv.Itoa(i):
				errs[i] = fmt.Errorf("stdout %q, stderr %q, exit %d, limit %q", res.Stdout, res.Stderr, res.ExitCode, res.Limit)
			case len(res.Files) != 1 || string(res.Files[0].Data) != strconv.Itoa(i*i):
				errs[i] = fmt.Errorf("files %v", res.Files)
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("run %d: %v", i, err)
		}
	}
	if c := ns.claims(t); len(c) != 0 {
		t.Errorf("claims left after %d runs: %q", n, c)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(s)
	for _, m := range []struct {
		name, labels string
		want         float64
	}{
		{"created", `event="created"`, n}, {"cleaned", `event="cleaned"`, n}, {"leaked", `event="leaked"`, 0},
	} {
		if got := testutil.ToFloat64(s.metrics.claims.WithLabelValues(m.name)); got != m.want {
			t.Errorf("sandpiper_kubernetes_claims_total{%s} = %v, want %v", m.labels, got, m.want)
		}
	}
	if got := testutil.ToFloat64(s.metrics.runs.WithLabelValues("kubernetes", "ok")); got != n {
		t.Errorf(`sandpiper_sandbox_backend_runs_total{backend="kubernetes",result="ok"} = %v, want %d`, got, n)
	}
	if got := testutil.ToFloat64(s.metrics.held); got != 0 {
		t.Errorf("sandpiper_kubernetes_claims_held = %v after the runs, want 0", got)
	}
	if count, err := testutil.GatherAndCount(reg, "sandpiper_kubernetes_claim_seconds"); err != nil || count != 1 {
		t.Errorf("the registry serves %d claim latency histograms (%v), want 1", count, err)
	}
}

func TestDoctor(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, poolOptions{replicas: 1})
	checks := Doctor(t.Context(), ns.config(t))
	var names []string
	for _, c := range checks {
		if !c.OK || c.Warn {
			t.Errorf("%s: ok=%v warn=%v: %s", c.Name, c.OK, c.Warn, c.Detail)
		}
		names = append(names, c.Name)
	}
	want := []string{"kubernetes cluster", "kubernetes CRDs", "kubernetes RBAC", "kubernetes warm pool", "kubernetes run"}
	if !slices.Equal(names, want) {
		t.Errorf("checks %q, want %q", names, want)
	}
	if d := checks[len(checks)-1].Detail; !strings.Contains(d, "print(6 * 7) → 42") {
		t.Errorf("the run's check says %q", d)
	}

	t.Run("forbidden", func(t *testing.T) {
		cfg := ns.config(t)
		cfg.Kubeconfig = kubeconfigFor(t, "nobody")
		checks := Doctor(t.Context(), cfg)
		last := checks[len(checks)-1]
		if last.Name != "kubernetes RBAC" || last.OK || !strings.Contains(last.Detail, "may not create sandboxclaims") {
			t.Errorf("last check %+v; want RBAC failing on create sandboxclaims", last)
		}
	})
	t.Run("empty pool", func(t *testing.T) {
		empty := newNamespace(t, poolOptions{replicas: 0, coldDelay: "never"})
		cfg := empty.config(t)
		cfg.ReadyTimeout = time.Second
		checks := Doctor(t.Context(), cfg)
		var pool, run Check
		for _, c := range checks {
			switch c.Name {
			case "kubernetes warm pool":
				pool = c
			case "kubernetes run":
				run = c
			}
		}
		if !pool.Warn || !strings.Contains(pool.Detail, "0 of 0 sandboxes ready") {
			t.Errorf("pool check %+v; want a warning with 0 of 0 ready", pool)
		}
		if run.OK || !strings.Contains(run.Detail, "no sandbox became ready in 1 s") {
			t.Errorf("run check %+v; want it failing with no sandbox ready", run)
		}
	})
}

// TestDeployBot creates the shipped Deployment: the API server's
// validation of the example.
func TestDeployBot(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, poolOptions{})
	applyFile(t, "deploy/bot.yaml", ns.name, nil)
	u, err := admin.Resource(resources["Deployment"]).Namespace(ns.name).Get(t.Context(), "sandpiper", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	env := fmt.Sprint(u.Object["spec"])
	for _, want := range []string{"SANDPIPER_SANDBOX", "kubernetes", "SANDPIPER_KUBERNETES_WARM_POOL", "serviceAccountName:sandpiper"} {
		if !strings.Contains(env, want) {
			t.Errorf("the Deployment lacks %q", want)
		}
	}
}
