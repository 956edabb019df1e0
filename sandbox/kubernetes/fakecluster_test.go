package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/agent-sandbox/packages/sandboxd/pkg/server"
	processv1 "sigs.k8s.io/agent-sandbox/packages/sandboxd/spec/process/v1"

	"github.com/sandpiper-bot/sandpiper/sandbox"
	"github.com/sandpiper-bot/sandpiper/sandbox/local"
)

// fakeCluster plays, honestly and in small, the parts of a cluster that
// envtest does not run, for the sandboxes of every namespace:
//
//   - agent-sandbox's controller (extensions/controllers in the module):
//     it keeps each SandboxWarmPool's replicas of unclaimed sandboxes made
//     from its SandboxTemplate, with the pool's status; it binds each new
//     SandboxClaim to a ready pool sandbox (adoption: the sandbox leaves
//     the pool, owned by the claim) or, with none, to a sandbox started
//     cold; it mirrors the sandbox's Ready condition and pod IPs on the
//     claim, and says SandboxMissing when it is gone; and it deletes a
//     claim whose lifecycle.shutdownTime has passed, with the Delete
//     policy. agent-sandbox's claim controller enforces shutdownTime so;
//     nothing else does.
//   - the garbage collector (kube-controller-manager): a sandbox whose
//     owning claim is gone is deleted.
//   - the kubelet: a sandbox becomes ready when its "pod" is up, and a
//     pod is a runtime at an address of its own (127.1.x.y) that speaks
//     sandboxd's wire protocol: sandboxd's own REST server (its
//     package, pkg/server) over a directory standing for /mnt/data, and
//     its ProcessService, where the program's command (the launcher) is
//     run with sandbox/local, the isolation a gVisor pod gives, and other
//     commands (the file collector) by sandboxd's own ProcessServer.
//
// A pool's annotation coldDelayAnnotation sets how long a cold start
// takes ("never": no room in the cluster). Nothing runs unless the test
// process makes it: there are no pods, nodes or images.
type fakeCluster struct {
	dyn                dynamic.Interface
	local              *local.Sandbox
	grpcPort, restPort int
	kick               chan struct{}

	mu      sync.Mutex
	pods    map[string]*fakePod  // by namespace/sandbox
	readyAt map[string]time.Time // sandboxes whose pod starts then
	nextIP  int
	started map[string]int // programs started, by namespace/sandbox
	killed  map[string]int // programs killed with SendSignal
}

// coldDelayAnnotation on a warm pool says how long a cold start of a
// sandbox takes ("never": it never becomes ready).
const coldDelayAnnotation = "test.sandpiper.dev/cold-start"

// Labels of agent-sandbox's that the controller's part uses.
const (
	warmPoolLabel = "agents.x-k8s.io/warm-pool-sandbox" // value: the pool's name, here
	claimUIDLabel = "agents.x-k8s.io/claim-uid"
)

func newFakeCluster(dyn dynamic.Interface, l *local.Sandbox, grpcPort, restPort int) *fakeCluster {
	return &fakeCluster{
		dyn: dyn, local: l, grpcPort: grpcPort, restPort: restPort,
		kick:    make(chan struct{}, 1),
		pods:    map[string]*fakePod{},
		readyAt: map[string]time.Time{},
		started: map[string]int{},
		killed:  map[string]int{},
	}
}

// run reconciles on every change to claims, sandboxes and pools, and
// every 50 ms (for start delays and shutdown times), until ctx ends.
func (c *fakeCluster) run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, res := range []schema.GroupVersionResource{claimsResource, sandboxesResource, poolsResource} {
		wg.Go(func() { c.watch(ctx, res) })
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-c.kick:
		case <-tick.C:
		}
		if err := c.reconcile(ctx); err != nil && ctx.Err() == nil {
			fmt.Fprintf(os.Stderr, "fake cluster: %v\n", err)
		}
	}
}

func (c *fakeCluster) nudge() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *fakeCluster) watch(ctx context.Context, res schema.GroupVersionResource) {
	for ctx.Err() == nil {
		w, err := c.dyn.Resource(res).Watch(ctx, metav1.ListOptions{})
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		for range w.ResultChan() {
			c.nudge()
		}
		w.Stop()
	}
}

// reconcile is one pass of the controllers' parts over the whole cluster.
func (c *fakeCluster) reconcile(ctx context.Context) error {
	list := func(res schema.GroupVersionResource) ([]unstructured.Unstructured, error) {
		l, err := c.dyn.Resource(res).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		return l.Items, nil
	}
	claims, err := list(claimsResource)
	if err != nil {
		return err
	}
	sandboxes, err := list(sandboxesResource)
	if err != nil {
		return err
	}
	pools, err := list(poolsResource)
	if err != nil {
		return err
	}
	now := time.Now()
	key := func(u *unstructured.Unstructured) string { return u.GetNamespace() + "/" + u.GetName() }
	claimUIDs := map[string]bool{}
	for i := range claims {
		claimUIDs[string(claims[i].GetUID())] = true
	}
	byName := map[string]*unstructured.Unstructured{}
	for i := range sandboxes {
		byName[key(&sandboxes[i])] = &sandboxes[i]
	}
	poolByName := map[string]*unstructured.Unstructured{}
	for i := range pools {
		poolByName[key(&pools[i])] = &pools[i]
	}
	taken := map[string]bool{}

	// The claim controller.
	for i := range claims {
		u := &claims[i]
		var cl claim
		if err := fromUnstructured(u, &cl); err != nil {
			return err
		}
		if u.GetDeletionTimestamp() != nil {
			continue
		}
		if lc := cl.Spec.Lifecycle; lc != nil && lc.ShutdownTime != nil && !now.Before(lc.ShutdownTime.Time) &&
			(lc.ShutdownPolicy == "Delete" || lc.ShutdownPolicy == "DeleteForeground") {
			c.delete(ctx, claimsResource, u.GetNamespace(), u.GetName())
			continue
		}
		if name := cl.Status.Sandbox.Name; name != "" {
			sb := byName[u.GetNamespace()+"/"+name]
			if sb == nil {
				c.claimStatus(ctx, u, "", nil, condition(metav1.ConditionFalse, "SandboxMissing", "Sandbox does not exist"))
				continue
			}
			var s sandboxObject
			fromUnstructured(sb, &s)
			cond := condition(metav1.ConditionFalse, "SandboxNotReady", "Sandbox is not ready")
			if r := ready(s.Status.Conditions); r != nil {
				cond = *r
			}
			c.claimStatus(ctx, u, name, s.Status.PodIPs, cond)
			continue
		}
		pool := poolByName[u.GetNamespace()+"/"+cl.Spec.WarmPoolRef.Name]
		if pool == nil {
			c.claimStatus(ctx, u, "", nil, condition(metav1.ConditionFalse, reasonWarmPoolNotFound, fmt.Sprintf("SandboxWarmPool %q not found", cl.Spec.WarmPoolRef.Name)))
			continue
		}
		owner := []any{map[string]any{"apiVersion": extensionsGroup + "/" + apiVersion, "kind": "SandboxClaim",
			"name": u.GetName(), "uid": string(u.GetUID()), "controller": true, "blockOwnerDeletion": true}}
		if sb := c.candidate(sandboxes, u.GetNamespace(), pool.GetName(), taken); sb != nil {
			// Adoption: the sandbox leaves the pool, owned by the claim.
			taken[key(sb)] = true
			labels := sb.GetLabels()
			delete(labels, warmPoolLabel)
			labels[claimUIDLabel] = string(u.GetUID())
			sb.SetLabels(labels)
			unstructured.SetNestedSlice(sb.Object, owner, "metadata", "ownerReferences")
			if _, err := c.dyn.Resource(sandboxesResource).Namespace(sb.GetNamespace()).Update(ctx, sb, metav1.UpdateOptions{}); err != nil {
				c.nudge() // a conflict: look again
				continue
			}
			var s sandboxObject
			fromUnstructured(sb, &s)
			c.claimStatus(ctx, u, sb.GetName(), s.Status.PodIPs, *ready(s.Status.Conditions))
			continue
		}
		// No warm sandbox: start one cold, named after the claim.
		sb, err := c.newSandbox(ctx, u.GetNamespace(), pool, u.GetName(), map[string]string{claimUIDLabel: string(u.GetUID())}, owner)
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		if err == nil {
			c.startIn(key(sb), pool.GetAnnotations()[coldDelayAnnotation])
		}
		c.claimStatus(ctx, u, u.GetName(), nil, condition(metav1.ConditionFalse, "SandboxNotReady", "Sandbox is not ready"))
	}

	// The garbage collector: a claim's sandbox goes with it.
	for i := range sandboxes {
		sb := &sandboxes[i]
		for _, o := range sb.GetOwnerReferences() {
			if o.Kind == "SandboxClaim" && !claimUIDs[string(o.UID)] {
				c.delete(ctx, sandboxesResource, sb.GetNamespace(), sb.GetName())
			}
		}
	}

	// The warm pool controller.
	for _, pool := range pools {
		var p warmPool
		fromUnstructured(&pool, &p)
		want := 1
		if p.Spec.Replicas != nil {
			want = int(*p.Spec.Replicas)
		}
		var have, readyCount int
		for i := range sandboxes {
			sb := &sandboxes[i]
			if sb.GetNamespace() != pool.GetNamespace() || sb.GetLabels()[warmPoolLabel] != pool.GetName() || taken[key(sb)] {
				continue
			}
			have++
			var s sandboxObject
			fromUnstructured(sb, &s)
			if isReady(s.Status.Conditions) {
				readyCount++
			}
		}
		for ; have < want; have++ {
			sb, err := c.newSandbox(ctx, pool.GetNamespace(), &pool, "", map[string]string{warmPoolLabel: pool.GetName()}, nil)
			if err != nil {
				return err
			}
			c.startIn(key(sb), "0s")
		}
		if p.Status.Replicas != int32(have) || p.Status.ReadyReplicas != int32(readyCount) {
			unstructured.SetNestedField(pool.Object, int64(have), "status", "replicas")
			unstructured.SetNestedField(pool.Object, int64(readyCount), "status", "readyReplicas")
			c.dyn.Resource(poolsResource).Namespace(pool.GetNamespace()).UpdateStatus(ctx, &pool, metav1.UpdateOptions{})
		}
	}

	// The kubelet: pods start when due, and end with their sandbox.
	c.mu.Lock()
	var due []*unstructured.Unstructured
	for k, at := range c.readyAt {
		if sb := byName[k]; sb != nil && !now.Before(at) {
			due = append(due, sb)
			delete(c.readyAt, k)
		}
	}
	for k, p := range c.pods {
		if byName[k] == nil {
			p.stop()
			delete(c.pods, k)
		}
	}
	c.mu.Unlock()
	for _, sb := range due {
		p, err := c.startPod(key(sb))
		if err != nil {
			return err
		}
		unstructured.SetNestedStringSlice(sb.Object, []string{p.ip}, "status", "podIPs")
		setCondition(sb, condition(metav1.ConditionTrue, "DependenciesReady", "Pod is Ready"))
		if _, err := c.dyn.Resource(sandboxesResource).Namespace(sb.GetNamespace()).UpdateStatus(ctx, sb, metav1.UpdateOptions{}); err != nil {
			c.mu.Lock()
			c.readyAt[key(sb)] = now // again, on the next pass
			c.mu.Unlock()
		}
	}
	return nil
}

// candidate is a ready sandbox of the pool no claim has.
func (c *fakeCluster) candidate(sandboxes []unstructured.Unstructured, ns, pool string, taken map[string]bool) *unstructured.Unstructured {
	for i := range sandboxes {
		sb := &sandboxes[i]
		if sb.GetNamespace() != ns || sb.GetLabels()[warmPoolLabel] != pool || taken[ns+"/"+sb.GetName()] || sb.GetDeletionTimestamp() != nil {
			continue
		}
		var s sandboxObject
		fromUnstructured(sb, &s)
		if isReady(s.Status.Conditions) && len(s.Status.PodIPs) > 0 {
			return sb
		}
	}
	return nil
}

// newSandbox creates a Sandbox from the pool's template.
func (c *fakeCluster) newSandbox(ctx context.Context, ns string, pool *unstructured.Unstructured, name string, labels map[string]string, owner []any) (*unstructured.Unstructured, error) {
	tmplName, _, _ := unstructured.NestedString(pool.Object, "spec", "sandboxTemplateRef", "name")
	tmpl, err := c.dyn.Resource(templatesResource).Namespace(ns).Get(ctx, tmplName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("template of pool %s: %w", pool.GetName(), err)
	}
	podTemplate, _, _ := unstructured.NestedMap(tmpl.Object, "spec", "podTemplate")
	sb := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": sandboxGroup + "/" + apiVersion, "kind": "Sandbox",
		"spec": map[string]any{"podTemplate": podTemplate},
	}}
	sb.SetNamespace(ns)
	if name != "" {
		sb.SetName(name)
	} else {
		sb.SetGenerateName(pool.GetName() + "-")
	}
	sb.SetLabels(labels)
	if owner != nil {
		unstructured.SetNestedSlice(sb.Object, owner, "metadata", "ownerReferences")
	}
	return c.dyn.Resource(sandboxesResource).Namespace(ns).Create(ctx, sb, metav1.CreateOptions{})
}

// startIn has the sandbox's pod start after delay ("never": not at all).
func (c *fakeCluster) startIn(key, delay string) {
	if delay == "never" {
		return
	}
	d, _ := time.ParseDuration(delay)
	c.mu.Lock()
	c.readyAt[key] = time.Now().Add(d)
	c.mu.Unlock()
}

// claimStatus sets the claim's status, when it changes.
func (c *fakeCluster) claimStatus(ctx context.Context, u *unstructured.Unstructured, sandboxName string, podIPs []string, cond metav1.Condition) {
	var cl claim
	fromUnstructured(u, &cl)
	r := ready(cl.Status.Conditions)
	if cl.Status.Sandbox.Name == sandboxName && fmt.Sprint(cl.Status.Sandbox.PodIPs) == fmt.Sprint(podIPs) &&
		r != nil && r.Status == cond.Status && r.Reason == cond.Reason {
		return
	}
	sb := map[string]any{}
	if sandboxName != "" {
		sb["name"] = sandboxName
	}
	if len(podIPs) > 0 {
		sb["podIPs"] = toAny(podIPs)
	}
	unstructured.SetNestedMap(u.Object, sb, "status", "sandbox")
	setCondition(u, cond)
	if _, err := c.dyn.Resource(claimsResource).Namespace(u.GetNamespace()).UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
		c.nudge()
	}
}

func (c *fakeCluster) delete(ctx context.Context, res schema.GroupVersionResource, ns, name string) {
	c.dyn.Resource(res).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{})
}

func condition(s metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: conditionReady, Status: s, Reason: reason, Message: msg, LastTransitionTime: metav1.Now()}
}

// setCondition sets u's Ready condition.
func setCondition(u *unstructured.Unstructured, cond metav1.Condition) {
	c := map[string]any{"type": cond.Type, "status": string(cond.Status), "reason": cond.Reason,
		"message": cond.Message, "lastTransitionTime": cond.LastTransitionTime.UTC().Format(time.RFC3339)}
	unstructured.SetNestedSlice(u.Object, []any{c}, "status", "conditions")
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// stopPods ends every pod.
func (c *fakeCluster) stopPods() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, p := range c.pods {
		p.stop()
		delete(c.pods, k)
	}
}

// started counts the programs started in namespace ns's sandboxes, and
// returns the sandbox of the last one.
func (c *fakeCluster) programs(ns string) (started, killed int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, n := range c.started {
		if filepath.Dir(k) == ns {
			started += n
		}
	}
	for k, n := range c.killed {
		if filepath.Dir(k) == ns {
			killed += n
		}
	}
	return started, killed
}

// fakePod is a sandbox's pod: sandboxd at an address of its own.
type fakePod struct {
	key  string // namespace/sandbox
	ip   string
	dir  string // sandboxd's root, standing for /mnt/data
	grpc *grpc.Server
	http *http.Server
}

// startPod starts the pod of the sandbox key.
func (c *fakeCluster) startPod(key string) (*fakePod, error) {
	c.mu.Lock()
	c.nextIP++
	n := c.nextIP
	c.mu.Unlock()
	ip := fmt.Sprintf("127.1.%d.%d", n/250, n%250+1)
	dir, err := os.MkdirTemp("", "sandpiper-pod-")
	if err != nil {
		return nil, err
	}
	gl, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(c.grpcPort)))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	rl, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(c.restPort)))
	if err != nil {
		gl.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	p := &fakePod{key: key, ip: ip, dir: dir, grpc: grpc.NewServer(),
		http: &http.Server{Handler: server.NewRESTServer(dir, "", logr.Discard()).Handler()}}
	processv1.RegisterProcessServiceServer(p.grpc, &fakeProcess{
		real:    server.NewProcessServer(dir, nil, 0),
		pod:     p,
		cluster: c,
		runs:    map[int32]context.CancelFunc{},
		next:    1 << 20,
	})
	go p.grpc.Serve(gl)
	go p.http.Serve(rl)
	c.mu.Lock()
	c.pods[key] = p
	c.mu.Unlock()
	return p, nil
}

// stop ends the pod: connections are cut, and a program running is killed.
func (p *fakePod) stop() {
	p.grpc.Stop()
	p.http.Close()
	os.RemoveAll(p.dir)
}

// fakeProcess is sandboxd's ProcessService, where the program's command
// runs with sandbox/local and any other command with sandboxd's own
// ProcessServer.
type fakeProcess struct {
	processv1.UnimplementedProcessServiceServer
	real    *server.ProcessServer
	pod     *fakePod
	cluster *fakeCluster

	mu   sync.Mutex
	runs map[int32]context.CancelFunc
	next int32
}

// Start runs the launcher's program with sandbox/local, with the files
// in the pod's root and the limits the launcher would set, puts the files
// it made back and sends its output and exit as sandboxd does.
func (f *fakeProcess) Start(req *processv1.StartRequest, stream processv1.ProcessService_StartServer) error {
	lim, code, ok := parseLauncher(req.GetConfig().GetCommand())
	if !ok {
		return f.real.Start(req, stream)
	}
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	f.mu.Lock()
	f.next++
	pid := f.next
	f.runs[pid] = cancel
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.runs, pid)
		f.mu.Unlock()
	}()
	if err := stream.Send(&processv1.StartResponse{Event: &processv1.StartResponse_Init{Init: &processv1.InitEvent{ProcessId: pid}}}); err != nil {
		return err
	}
	f.cluster.mu.Lock()
	f.cluster.started[f.pod.key]++
	f.cluster.mu.Unlock()
	files, err := readTree(f.pod.dir)
	if err != nil {
		return status.Errorf(codes.Internal, "read the root: %v", err)
	}
	res, err := f.cluster.local.Run(ctx, sandbox.Request{Code: code, Files: files, Limits: lim})
	if err != nil {
		if ctx.Err() != nil {
			// Killed: sandboxd reports a process ended by a signal as -1.
			return stream.Send(&processv1.StartResponse{Event: &processv1.StartResponse_Exit{Exit: &processv1.ExitEvent{ExitCode: -1}}})
		}
		return status.Errorf(codes.Internal, "%v", err)
	}
	for _, file := range res.Files {
		p := filepath.Join(f.pod.dir, filepath.FromSlash(file.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return status.Errorf(codes.Internal, "%v", err)
		}
		if err := os.WriteFile(p, file.Data, 0o644); err != nil {
			return status.Errorf(codes.Internal, "%v", err)
		}
	}
	for _, o := range []struct {
		data   []byte
		stderr bool
	}{{res.Stdout, false}, {res.Stderr, true}} {
		for out := o.data; len(out) > 0; {
			chunk := out[:min(len(out), 4096)]
			out = out[len(chunk):]
			ev := &processv1.StartResponse{Event: &processv1.StartResponse_Stdout{Stdout: chunk}}
			if o.stderr {
				ev = &processv1.StartResponse{Event: &processv1.StartResponse_Stderr{Stderr: chunk}}
			}
			if err := stream.Send(ev); err != nil {
				return err
			}
		}
	}
	return stream.Send(&processv1.StartResponse{Event: &processv1.StartResponse_Exit{Exit: &processv1.ExitEvent{ExitCode: int32(res.ExitCode)}}})
}

// SendSignal kills a program run with sandbox/local.
func (f *fakeProcess) SendSignal(ctx context.Context, req *processv1.SendSignalRequest) (*processv1.SendSignalResponse, error) {
	f.mu.Lock()
	cancel, ok := f.runs[req.GetProcessId()]
	f.mu.Unlock()
	if !ok {
		return f.real.SendSignal(ctx, req)
	}
	f.cluster.mu.Lock()
	f.cluster.killed[f.pod.key]++
	f.cluster.mu.Unlock()
	cancel()
	return &processv1.SendSignalResponse{}, nil
}

func (f *fakeProcess) Execute(ctx context.Context, req *processv1.ExecuteRequest) (*processv1.ExecuteResponse, error) {
	return f.real.Execute(ctx, req)
}

// parseLauncher reads the program and its limits from the launcher's
// command; ok is false for any other command.
func parseLauncher(cmd []string) (lim sandbox.Limits, code string, ok bool) {
	if len(cmd) != 10 || cmd[0] != python || cmd[4] != launcher {
		return lim, "", false
	}
	var n [4]int64
	for i := range n {
		v, err := strconv.ParseInt(cmd[5+i], 10, 64)
		if err != nil {
			return lim, "", false
		}
		n[i] = v
	}
	return sandbox.Limits{
		Memory:    n[0],
		CPUTime:   time.Duration(n[1]) * time.Second,
		OpenFiles: int(n[2]),
		DiskSize:  n[3],
		Timeout:   10 * time.Minute, // the backend ends the run itself, with SendSignal
	}, cmd[9], true
}

// readTree reads the regular files under dir, named relative to it.
func readTree(dir string) ([]sandbox.File, error) {
	var files []sandbox.File
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files = append(files, sandbox.File{Name: filepath.ToSlash(rel), Data: data})
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	return files, err
}
