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
	"strings"
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

// fakeCluster plays, in small, the two parts of a cluster that neither
// envtest nor agent-sandbox's controller (which the tests run for real,
// controller_test.go) provides, for the pods of every namespace:
//
//   - the kubelet: a Pod the Sandbox controller creates starts, and is
//     marked Running and Ready with an IP of its own (127.1.x.y), where it
//     serves sandboxd's wire protocol: sandboxd's own REST server (its
//     package, pkg/server) over a directory standing for /mnt/data, and
//     its ProcessService, where the program's command (the launcher) is
//     run with sandbox/local, the isolation a gVisor pod gives, and other
//     commands (the file collector) by sandboxd's own ProcessServer. A
//     Pod deleted ends its sandboxd. There is no scheduler: pods stay
//     unbound (no nodeName), as agent-sandbox does not look.
//   - the garbage collector (kube-controller-manager): a Sandbox whose
//     owner (its SandboxClaim, or its SandboxWarmPool) is gone is
//     deleted, and so is a Pod whose Sandbox is gone.
//
// A cold start (a Sandbox the claim controller made because the pool had
// none ready: its launch-type label is "cold") takes as long as the
// claim's pool's annotation coldDelayAnnotation says ("never": no room
// in the cluster); a warm pool's pods start at once. Nothing runs unless
// the test process makes it: there are no nodes or images.
type fakeCluster struct {
	dyn                dynamic.Interface
	local              *local.Sandbox
	grpcPort, restPort int
	kick               chan struct{}

	mu      sync.Mutex
	pods    map[string]*fakePod  // running, by podKey
	readyAt map[string]time.Time // pods seen, by podKey, and when they start (zero: never)
	nextIP  int
	started map[string]int // programs started, by podKey
	killed  map[string]int // programs killed with SendSignal, by podKey
}

// coldDelayAnnotation on a warm pool says how long a cold start of one of
// its claims' sandboxes takes ("never": it never becomes ready).
const coldDelayAnnotation = "test.sandpiper.dev/cold-start"

// Labels of agent-sandbox's that the tests and the kubelet's part read.
const (
	warmPoolLabel   = "agents.x-k8s.io/warm-pool-sandbox" // on a pool's sandboxes: the pool's name
	claimUIDLabel   = "agents.x-k8s.io/claim-uid"         // on a claim's sandbox: the claim's UID
	launchTypeLabel = "agents.x-k8s.io/launch-type"       // "warm" (adopted) or "cold"
)

var podsResource = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

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

// run reconciles on every change to pods, sandboxes, claims and pools,
// and every 50 ms (for start delays), until ctx ends.
func (c *fakeCluster) run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, res := range []schema.GroupVersionResource{podsResource, sandboxesResource, claimsResource, poolsResource} {
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

// reconcile is one pass of the garbage collector and the kubelet over
// the whole cluster.
func (c *fakeCluster) reconcile(ctx context.Context) error {
	list := func(res schema.GroupVersionResource) ([]unstructured.Unstructured, error) {
		l, err := c.dyn.Resource(res).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		return l.Items, nil
	}
	// Owners first: a dependent listed after them whose owner is missing
	// is checked once more before it is deleted.
	claims, err := list(claimsResource)
	if err != nil {
		return err
	}
	pools, err := list(poolsResource)
	if err != nil {
		return err
	}
	sandboxes, err := list(sandboxesResource)
	if err != nil {
		return err
	}
	pods, err := list(podsResource)
	if err != nil {
		return err
	}
	byUID := map[string]*unstructured.Unstructured{}
	for _, l := range [][]unstructured.Unstructured{claims, pools, sandboxes} {
		for i := range l {
			byUID[string(l[i].GetUID())] = &l[i]
		}
	}

	// The garbage collector.
	for _, l := range [][]unstructured.Unstructured{sandboxes, pods} {
		for i := range l {
			if c.orphan(ctx, &l[i], byUID) {
				res := sandboxesResource
				if l[i].GetKind() == "Pod" {
					res = podsResource
				}
				c.dyn.Resource(res).Namespace(l[i].GetNamespace()).Delete(ctx, l[i].GetName(), metav1.DeleteOptions{})
			}
		}
	}

	// The kubelet: pods start when due, and end when deleted.
	now := time.Now()
	live := map[string]*unstructured.Unstructured{}
	var due []*unstructured.Unstructured
	for i := range pods {
		p := &pods[i]
		if p.GetDeletionTimestamp() != nil {
			continue
		}
		k := podKey(p)
		live[k] = p
		c.mu.Lock()
		at, seen := c.readyAt[k]
		_, running := c.pods[k]
		c.mu.Unlock()
		if !seen {
			var known bool
			if at, known = c.startTime(p, byUID, now); !known {
				continue // its owners were made after they were listed: next pass
			}
			c.mu.Lock()
			c.readyAt[k] = at
			c.mu.Unlock()
		}
		if !running && !at.IsZero() && !now.Before(at) {
			due = append(due, p)
		}
	}
	c.mu.Lock()
	for k, p := range c.pods {
		if live[k] == nil {
			p.stop()
			delete(c.pods, k)
		}
	}
	for k := range c.readyAt {
		if live[k] == nil {
			delete(c.readyAt, k)
		}
	}
	c.mu.Unlock()
	for _, u := range due {
		p, err := c.startPod(podKey(u))
		if err != nil {
			return err
		}
		if err := c.markReady(ctx, u, p.ip); err != nil {
			// Again on the next pass.
			c.mu.Lock()
			if c.pods[p.key] == p {
				p.stop()
				delete(c.pods, p.key)
			}
			c.mu.Unlock()
			c.nudge()
		}
	}
	return nil
}

// orphan reports whether u's controlling owner is gone: not among the
// owners listed, and not found (or another object) when read again.
func (c *fakeCluster) orphan(ctx context.Context, u *unstructured.Unstructured, byUID map[string]*unstructured.Unstructured) bool {
	ref := metav1.GetControllerOfNoCopy(u)
	if ref == nil || byUID[string(ref.UID)] != nil {
		return false
	}
	var res schema.GroupVersionResource
	switch ref.Kind {
	case "SandboxClaim":
		res = claimsResource
	case "SandboxWarmPool":
		res = poolsResource
	case "Sandbox":
		res = sandboxesResource
	default:
		return false
	}
	owner, err := c.dyn.Resource(res).Namespace(u.GetNamespace()).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return true
	case err != nil:
		return false
	}
	return owner.GetUID() != ref.UID
}

// startTime is when the pod p starts: now for a warm pool's, after its
// pool's cold start delay for a cold start; zero for never. known is
// false when p's Sandbox, or a cold one's claim, is not among those
// listed.
func (c *fakeCluster) startTime(p *unstructured.Unstructured, byUID map[string]*unstructured.Unstructured, now time.Time) (at time.Time, known bool) {
	sb := owner(p, byUID)
	if sb == nil {
		return time.Time{}, false
	}
	if sb.GetLabels()[launchTypeLabel] != "cold" {
		return now, true
	}
	cl := owner(sb, byUID)
	if cl == nil {
		return time.Time{}, false
	}
	var delay string
	pool, _, _ := unstructured.NestedString(cl.Object, "spec", "warmPoolRef", "name")
	for _, u := range byUID {
		if u.GetKind() == "SandboxWarmPool" && u.GetNamespace() == cl.GetNamespace() && u.GetName() == pool {
			delay = u.GetAnnotations()[coldDelayAnnotation]
		}
	}
	if delay == "never" {
		return time.Time{}, true
	}
	d, _ := time.ParseDuration(delay)
	return now.Add(d), true
}

// podKey names a pod, and this one alone of the pods of that name (a
// Sandbox's pod deleted is made again under the same name):
// namespace/name/uid.
func podKey(p *unstructured.Unstructured) string {
	return p.GetNamespace() + "/" + p.GetName() + "/" + string(p.GetUID())
}

// owner is u's controlling owner among those listed.
func owner(u *unstructured.Unstructured, byUID map[string]*unstructured.Unstructured) *unstructured.Unstructured {
	if ref := metav1.GetControllerOfNoCopy(u); ref != nil {
		return byUID[string(ref.UID)]
	}
	return nil
}

// markReady reports the pod u Running and Ready at ip, as a kubelet does
// once its containers' readiness probes pass.
func (c *fakeCluster) markReady(ctx context.Context, u *unstructured.Unstructured, ip string) error {
	now := metav1.Now().UTC().Format(time.RFC3339)
	var conds []any
	for _, t := range []string{"PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready", "PodScheduled"} {
		conds = append(conds, map[string]any{"type": t, "status": "True", "lastTransitionTime": now})
	}
	var containers []any
	cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "containers")
	for _, x := range cs {
		ct, _ := x.(map[string]any)
		containers = append(containers, map[string]any{
			"name": ct["name"], "image": ct["image"], "imageID": "", "ready": true, "started": true, "restartCount": int64(0),
			"state": map[string]any{"running": map[string]any{"startedAt": now}},
		})
	}
	u.Object["status"] = map[string]any{
		"phase": "Running", "conditions": conds, "startTime": now,
		"podIP": ip, "podIPs": []any{map[string]any{"ip": ip}},
		"hostIP": "127.0.0.1", "hostIPs": []any{map[string]any{"ip": "127.0.0.1"}},
		"containerStatuses": containers,
	}
	_, err := c.dyn.Resource(podsResource).Namespace(u.GetNamespace()).UpdateStatus(ctx, u, metav1.UpdateOptions{})
	return err
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
		if strings.HasPrefix(k, ns+"/") {
			started += n
		}
	}
	for k, n := range c.killed {
		if strings.HasPrefix(k, ns+"/") {
			killed += n
		}
	}
	return started, killed
}

// fakePod is a sandbox's pod: sandboxd at an address of its own.
type fakePod struct {
	key  string // podKey
	ip   string
	dir  string // sandboxd's root, standing for /mnt/data
	grpc *grpc.Server
	http *http.Server
}

// startPod starts the pod key (podKey).
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
	if len(cmd) != 11 || cmd[0] != python || cmd[4] != launcher || cmd[10] != runner {
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
