// Package kubernetes runs each sandbox request in a sandbox of its own on
// a Kubernetes cluster, through agent-sandbox (sigs.k8s.io/agent-sandbox,
// v1beta1): SANDPIPER_SANDBOX=kubernetes.
//
// # A run
//
// Each run creates a SandboxClaim (extensions.agents.x-k8s.io) on the
// configured SandboxWarmPool, waits for agent-sandbox to bind it to a
// ready Sandbox (agents.x-k8s.io), adopted from the pool or started cold,
// for at most [Config.ReadyTimeout] (a sandbox deleted before it is
// ready is replaced by agent-sandbox, and the wait follows the claim to
// the next), and then talks to the sandbox's
// runtime, sandboxd, at the pod's IP: the input files are written with
// its REST API (PUT /v1/files), the program runs through its gRPC
// ProcessService (Start, streaming stdout and stderr; SendSignal), and
// the files it made are listed in the pod, by the same collector the
// Vercel backend runs, and read back (GET /v1/files). The claim is then
// deleted, whatever happened, and the sandbox and its pod with it: no
// sandbox serves two runs. The claim's lifecycle.shutdownTime (the ready
// timeout, plus the run's timeout, plus two minutes) with the Delete
// policy is the backstop: a bot that crashes mid-run leaves a claim that
// agent-sandbox's controller deletes then.
//
// The program runs as `python3 -c CODE` would (through
// [sandbox.StateRunner], which serves the chart helper; no state is kept)
// in /mnt/data ([sandbox.WorkDir], sandboxd's root), started by a small
// launcher that sets the run's
// limits as rlimits (memory as RLIMIT_DATA, CPU time, open files, file
// size) and reports a program killed by a signal as 128+signal. The
// backend ends the program at the run's timeout (SendSignal SIGKILL to
// its process group) and when the caller gives up (Stop): the results
// name the limits as every backend does: timeout (exit 137, shown as
// 124 by `sandpiper exec`), memory (a MemoryError, or exit 137 from the
// pod's OOM killer), CPU time (exit 152). Output is capped while it
// streams, and the result is bounded by [sandbox.Result.Bound]. A sandbox
// deleted during the run (an operator, a drained node, a pod killed for
// memory under gVisor) ends it at once with a result that says so
// ([sandbox.Result.Gone], a verdict of kind [sandbox.VerdictGone]); the
// model is told it is not its code's fault.
//
// The sandbox-router is not used: it proxies HTTP/1.1, and sandboxd's
// ProcessService is gRPC (HTTP/2). The bot must therefore reach pod IPs:
// run it in the cluster (deploy/bot.yaml).
//
// What agent-sandbox's API does not give per run comes from the
// template: the pod's CPU limit is the run's CPUs (SANDPIPER_SANDBOX_CPUS
// does not apply), the kubelet's pod PID limit its processes, and the
// container's memory limit the backstop above SANDPIPER_SANDBOX_MEMORY.
// Network isolation is the template's NetworkPolicy; the kernel boundary
// is its RuntimeClass (gVisor in deploy/).
//
// Errors say what to fix: no cluster ([ErrNoCluster]), an API server that
// does not answer ([ErrUnreachable]), agent-sandbox not installed
// ([ErrNoCRDs]), RBAC ([ErrForbidden], naming what is missing), no such
// pool ([ErrNoWarmPool]), and a pool that stays empty ([ErrNotReady]: "no
// sandbox became ready in 60 s", with the pool's ready count). [Doctor]
// checks all of it, and makes one real run. [Sandbox] is a
// prometheus.Collector of the claim latency, the runs by result and the
// claims created, cleaned and leaked.
//
// # From zero to a first answer on a cluster
//
// You need a cluster whose CNI enforces NetworkPolicy, gVisor on its
// nodes (GKE Sandbox, or runsc with a RuntimeClass named gvisor), kubectl,
// and the Slack app and model key of the README's "Slack: from create
// app to a first answer".
//
//  1. Install agent-sandbox v1.0.1, its controller with the extensions
//     (the release's manifest, or its Helm chart in the module's helm/),
//     and check its CRDs: kubectl get crd sandboxclaims.extensions.agents.x-k8s.io.
//  2. Build the bot's image (the repository's Dockerfile: the bot and
//     Python 3.13 with the pinned data stack; the sandboxes run the same
//     image), push it where the cluster pulls from, and put its name in
//     deploy/sandbox-template.yaml and deploy/bot.yaml.
//  3. Create the namespace and the Secret that bot.yaml describes (Slack
//     tokens, the model's key, SANDPIPER_REDIS_URL for a Redis of yours):
//     kubectl create namespace sandpiper, then kubectl -n sandpiper
//     create secret generic sandpiper --from-literal=...
//  4. kubectl apply -k sandbox/kubernetes/deploy/ : the template, the warm
//     pool (4 sandboxes kept ready), the bot's Role and the bot (2
//     replicas).
//  5. Wait for the pool: kubectl -n sandpiper get sandboxwarmpools shows
//     READY 4.
//  6. kubectl -n sandpiper exec deploy/sandpiper -- sandpiper doctor :
//     every line ok, the last one "kubernetes run: claimed a ready
//     sandbox in …; print(6 * 7) → 42".
//  7. Mention the bot in a channel with a question that needs code
//     ("what is 2**100?"); its card shows the run. Each run's claim
//     appears and goes: kubectl -n sandpiper get sandboxclaims -w.
//
// Outside the cluster (a laptop with a kubeconfig), doctor's cluster,
// CRD, RBAC and pool checks work; the run needs the pods' network.
//
// Configuration: SANDPIPER_KUBERNETES_WARM_POOL (required),
// SANDPIPER_KUBERNETES_NAMESPACE (default the pod's), SANDPIPER_KUBERNETES_KUBECONFIG
// (or KUBECONFIG; in a pod, its service account), SANDPIPER_KUBERNETES_CONTEXT,
// SANDPIPER_KUBERNETES_READY_TIMEOUT (60s), and the common
// SANDPIPER_SANDBOX_* limits; SANDPIPER_SANDBOX_CONCURRENCY bounds the
// claims a replica holds at once (default 10).
//
// # Measured
//
// Against a real API server, agent-sandbox's own controller and a fake
// pod (go test -bench Run ./sandbox/kubernetes, 2 shared cores): at a
// load of 1–2, ~210–245 ms per run where the local backend takes 60–85
// ms, ~120–140 ms of it the claim (measured with the tests' earlier
// stand-in for the controller); with the real controller, at a load of
// 23–25, 0.6–1.3 s per run where the local backend takes 205–245 ms,
// 95–160 ms of it the claim. A real cluster adds the pod's Python start
// and network round trips (agent-sandbox reports claims ready in 1 s at
// P50, 5 s at P99).
//
// # Tests
//
// The tests run against envtest's kube-apiserver and etcd, with
// agent-sandbox's CRDs and its controller (the Sandbox, SandboxClaim,
// SandboxTemplate and SandboxWarmPool reconcilers of the module go.mod
// requires, in the test process): claims, adoption from the warm pool,
// cold starts and shutdownTime are upstream's code. The tests play the
// kubelet (pods Running and Ready at an address where sandboxd's servers
// answer) and the garbage collector. What upstream showed that a
// stand-in had not: a sandbox deleted before it is ready is replaced, the
// claim bound to another (the wait follows it); an adopted sandbox keeps
// its pool-made name, a cold one takes the claim's; the claim's Ready
// condition is the sandbox's, forwarded ("DependenciesNotReady: Pod
// exists with phase: Pending" while a cold start waits). The API
// server's audit log records the bot's requests, and a test holds
// deploy/rbac.yaml's Role to exactly them.
package kubernetes
