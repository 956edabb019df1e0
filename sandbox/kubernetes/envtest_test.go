package kubernetes

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/sandpiper-bot/sandpiper/sandbox/local"
)

// The tests run against a real kube-apiserver and etcd started by
// controller-runtime's envtest, with agent-sandbox's CRDs from its module
// and its controller from the same module, run in this process
// (controller_test.go). There is no kubelet and no garbage collector:
// fakeCluster plays their parts (fakecluster_test.go). The binaries are
// built from the Go module proxy by .ci/envtest-assets, once, into a
// cache directory.
//
// SANDPIPER_REQUIRE_ENVTEST=1 (set by .ci/run) makes a missing control
// plane fail the tests instead of skipping them.

var (
	// clusterErr says why there is no cluster; the tests that need one
	// skip (or fail, under SANDPIPER_REQUIRE_ENVTEST=1) with it.
	clusterErr error
	testEnv    *envtest.Environment
	admin      dynamic.Interface
	fake       *fakeCluster
	// auditLog is the API server's audit log of the requests the bots'
	// service accounts make (rbac_test.go).
	auditLog string
)

func TestMain(m *testing.M) {
	flag.Parse()
	if os.Getenv(helperEnv) != "" {
		os.Exit(helperMain())
	}
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	stop, err := startCluster()
	if err != nil {
		clusterErr = err
		if os.Getenv("SANDPIPER_REQUIRE_ENVTEST") == "1" {
			fmt.Fprintf(os.Stderr, "sandbox/kubernetes: SANDPIPER_REQUIRE_ENVTEST=1 and no control plane: %v\n", err)
			return 1
		}
	} else {
		defer stop()
	}
	return m.Run()
}

// needCluster skips t when there is no control plane.
func needCluster(t testing.TB) {
	t.Helper()
	if clusterErr != nil {
		t.Skipf("no kube-apiserver and etcd for envtest: %v", clusterErr)
	}
}

// startCluster starts the control plane (with an audit log of the bots'
// requests), installs the CRDs and the RuntimeClass, and starts
// agent-sandbox's controller and the fake cluster parts.
func startCluster() (stop func(), err error) {
	assets, err := envtestAssets()
	if err != nil {
		return nil, err
	}
	crds, err := agentSandboxCRDs()
	if err != nil {
		return nil, err
	}
	// The interpreter sandbox/local resolves (through a version
	// manager's shims) is also the python3 sandboxd runs from PATH (the
	// collector).
	lsb, err := local.New(context.Background(), local.Config{Python: cmp.Or(os.Getenv("SANDPIPER_TEST_PYTHON"), local.DefaultPython), Concurrency: 4})
	if err != nil {
		return nil, fmt.Errorf("the local backend the fake sandboxes run programs with: %w", err)
	}
	os.Setenv("PATH", filepath.Dir(lsb.Python().Executable)+string(os.PathListSeparator)+os.Getenv("PATH"))
	testEnv = &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		CRDDirectoryPaths:        []string{crds},
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	if auditLog, err = configureAudit(testEnv); err != nil {
		lsb.Close()
		return nil, err
	}
	cfg, err := testEnv.Start()
	if err != nil {
		lsb.Close()
		os.RemoveAll(filepath.Dir(auditLog))
		return nil, fmt.Errorf("start envtest with %s: %w", assets, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	cleanup := func() {
		cancel()
		wg.Wait()
		if fake != nil {
			fake.stopPods()
		}
		lsb.Close()
		testEnv.Stop()
		os.RemoveAll(filepath.Dir(auditLog))
	}
	defer func() {
		if err != nil {
			cleanup()
		}
	}()
	if admin, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	// The RuntimeClass deploy/sandbox-template.yaml names (gVisor's), which
	// the API server's admission requires of the pods.
	rc := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
		"metadata": map[string]any{"name": "gvisor"}, "handler": "runsc"}}
	if _, err = admin.Resource(schema.GroupVersionResource{Group: "node.k8s.io", Version: "v1", Resource: "runtimeclasses"}).Create(ctx, rc, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("create the RuntimeClass gvisor: %w", err)
	}
	grpcPort, restPort, err := freePorts()
	if err != nil {
		return nil, err
	}
	controllerDone, err := startController(ctx, cfg)
	if err != nil {
		return nil, err
	}
	wg.Go(func() {
		if err := <-controllerDone; err != nil {
			fmt.Fprintf(os.Stderr, "agent-sandbox's controller stopped: %v\n", err)
		}
	})
	fake = newFakeCluster(admin, lsb, grpcPort, restPort)
	wg.Go(func() { fake.run(ctx) })
	return cleanup, nil
}

// envtestAssets is the directory holding etcd and kube-apiserver:
// KUBEBUILDER_ASSETS, or what .ci/envtest-assets builds (at once when it
// has built them before; in minutes the first time).
func envtestAssets() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		for _, b := range []string{"etcd", "kube-apiserver"} {
			if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
				return "", fmt.Errorf("KUBEBUILDER_ASSETS=%s: %w", dir, err)
			}
		}
		return dir, nil
	}
	if testing.Short() {
		return "", errors.New("-short, and KUBEBUILDER_ASSETS is unset (.ci/envtest-assets builds the binaries)")
	}
	cmd := exec.Command("../../.ci/envtest-assets")
	cmd.Stderr = os.Stderr // the first build takes minutes: say so
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf(".ci/envtest-assets could not build etcd and kube-apiserver: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// agentSandboxCRDs is the directory of agent-sandbox's CRDs, in the module
// go.mod requires.
func agentSandboxCRDs() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/agent-sandbox").Output()
	if err != nil {
		return "", fmt.Errorf("find the module sigs.k8s.io/agent-sandbox: %w", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "k8s", "crds"), nil
}

// freePorts picks the ports every fake sandbox's sandboxd listens on, at
// its own address (127.1.x.y): ports free on loopback.
func freePorts() (grpcPort, restPort int, err error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range 2 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, 0, err
		}
		ls = append(ls, l)
	}
	return ls[0].Addr().(*net.TCPAddr).Port, ls[1].Addr().(*net.TCPAddr).Port, nil
}

// testNamespace is a namespace of its own for one test, holding the
// shipped examples: the template, a warm pool and the bot's RBAC.
type testNamespace struct {
	name       string
	pool       string
	kubeconfig string // the bot's service account, with deploy/rbac.yaml's Role
}

// poolOptions shape a test's warm pool.
type poolOptions struct {
	replicas  int
	coldDelay string // how long a cold start takes; "never": no room for one
}

// newNamespace makes a namespace with deploy/'s template, warm pool and
// RBAC, and a kubeconfig for the bot's service account.
func newNamespace(t testing.TB, opts poolOptions) *testNamespace {
	t.Helper()
	needCluster(t)
	ctx := context.Background()
	name := "t-" + strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	name = strings.TrimRight(name, "-") + "-" + claimName()[len("sandpiper-"):][:5]
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}}
	if _, err := admin.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"rbac.yaml", "sandbox-template.yaml", "warm-pool.yaml"} {
		applyFile(t, filepath.Join("deploy", f), name, func(u *unstructured.Unstructured) {
			if u.GetKind() != "SandboxWarmPool" {
				return
			}
			unstructured.SetNestedField(u.Object, int64(opts.replicas), "spec", "replicas")
			if opts.coldDelay != "" {
				u.SetAnnotations(map[string]string{coldDelayAnnotation: opts.coldDelay})
			}
		})
	}
	if opts.replicas > 0 {
		eventually(t, 20*time.Second, "the warm pool ready", func() bool {
			u, err := admin.Resource(poolsResource).Namespace(name).Get(ctx, "sandpiper-python", metav1.GetOptions{})
			n, _, _ := unstructured.NestedInt64(u.Object, "status", "readyReplicas")
			return err == nil && n == int64(opts.replicas)
		})
	}
	return &testNamespace{name: name, pool: "sandpiper-python", kubeconfig: kubeconfigFor(t, "system:serviceaccount:"+name+":sandpiper", "system:serviceaccounts", "system:serviceaccounts:"+name)}
}

// kubeconfigFor writes a kubeconfig for the user name in groups (client
// certificates signed by envtest's CA) and returns its path.
func kubeconfigFor(t testing.TB, name string, groups ...string) string {
	t.Helper()
	return kubeconfigIn(t, testEnv, name, groups...)
}

// kubeconfigIn is kubeconfigFor in the control plane env.
func kubeconfigIn(t testing.TB, env *envtest.Environment, name string, groups ...string) string {
	t.Helper()
	addUser.Lock()
	u, err := env.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	addUser.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	b, err := u.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// addUser serializes envtest's AddUser, which is not documented as safe
// for concurrent use.
var addUser sync.Mutex

// resources maps the kinds of deploy/ to their resources.
var resources = map[string]schema.GroupVersionResource{
	"Namespace":       {Version: "v1", Resource: "namespaces"},
	"ServiceAccount":  {Version: "v1", Resource: "serviceaccounts"},
	"Role":            {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"},
	"RoleBinding":     {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
	"Deployment":      {Group: "apps", Version: "v1", Resource: "deployments"},
	"SandboxTemplate": templatesResource,
	"SandboxWarmPool": poolsResource,
}

// applyFile creates the objects of a deploy/ file in namespace ns (the
// files' own, sandpiper, replaced), through edit.
func applyFile(t testing.TB, path, ns string, edit func(*unstructured.Unstructured)) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.ReplaceAll(b, []byte("namespace: sandpiper"), []byte("namespace: "+ns))
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return
			}
			t.Fatalf("%s: %v", path, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		res, ok := resources[u.GetKind()]
		if !ok {
			t.Fatalf("%s: no resource for kind %s", path, u.GetKind())
		}
		if edit != nil {
			edit(&u)
		}
		var ri dynamic.ResourceInterface = admin.Resource(res)
		if u.GetNamespace() != "" {
			ri = admin.Resource(res).Namespace(u.GetNamespace())
		}
		if _, err := ri.Create(context.Background(), &u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: create %s %s: %v", path, u.GetKind(), u.GetName(), err)
		}
	}
}

// backend returns the backend for ns, as its bot would make it.
func (ns *testNamespace) backend(t testing.TB, edit func(*Config)) *Sandbox {
	t.Helper()
	cfg := ns.config(t)
	if edit != nil {
		edit(&cfg)
	}
	s, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// config is the backend's configuration for ns.
func (ns *testNamespace) config(t testing.TB) Config {
	return Config{
		WarmPool:     ns.pool,
		Namespace:    ns.name,
		Kubeconfig:   ns.kubeconfig,
		ReadyTimeout: 20 * time.Second,
		GRPCPort:     fake.grpcPort,
		RESTPort:     fake.restPort,
		Logger:       slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
}

// claims lists ns's SandboxClaims, as names.
func (ns *testNamespace) claims(t testing.TB) []string {
	t.Helper()
	list, err := admin.Resource(claimsResource).Namespace(ns.name).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, u := range list.Items {
		names = append(names, u.GetName())
	}
	return names
}

// eventually waits up to d for cond, failing t with what.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); !cond(); {
		if time.Now().After(end) {
			t.Fatalf("after %s: %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
