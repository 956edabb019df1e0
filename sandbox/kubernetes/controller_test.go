package kubernetes

import (
	"context"
	"fmt"
	"os"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	sandboxcontrollers "sigs.k8s.io/agent-sandbox/controllers"
	extensionsv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
	extensionscontrollers "sigs.k8s.io/agent-sandbox/extensions/controllers"
	"sigs.k8s.io/agent-sandbox/extensions/controllers/queue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// startController runs agent-sandbox's own controller (the module's
// controllers and extensions/controllers packages, v1.0.1, at the version
// go.mod requires) in this process against the API server at cfg, wired
// as its cmd/agent-sandbox-controller wires it with -extensions and its
// defaults: the Sandbox controller (a Sandbox's Pod, its Ready condition
// and pod IPs), and the SandboxClaim (adoption from the warm pool, cold
// starts, the claim's status, lifecycle.shutdownTime), SandboxTemplate
// (its NetworkPolicy) and SandboxWarmPool controllers. What differs from
// the command: no leader election, no metrics or probe listeners, no
// tracing (its no-op instrumenter, which lives in an internal package, is
// replaced by noTracer, the same thing), and logs go to stderr only with
// SANDPIPER_TEST_CONTROLLER_LOG=1. It runs until ctx ends.
func startController(ctx context.Context, cfg *rest.Config) (done <-chan error, err error) {
	log := logr.Discard()
	if os.Getenv("SANDPIPER_TEST_CONTROLLER_LOG") == "1" {
		log = funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, "agent-sandbox:", prefix, args) }, funcr.Options{Verbosity: 1})
	}
	ctrl.SetLogger(log)
	klog.SetLogger(log) // client-go's, on shutdown: "context canceled"

	scheme := sandboxcontrollers.Scheme
	utilruntime.Must(extensionsv1beta1.AddToScheme(scheme))
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = -1, 10 // the command's defaults: no client-side rate limit
	mgr, err := ctrl.NewManager(cfg, manager.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Logger:                 log,
		Cache: cache.Options{
			DefaultTransform: cache.TransformStripManagedFields(),
			ByObject: map[client.Object]cache.ByObject{
				&corev1.Pod{}: {Transform: sandboxcontrollers.PodCacheTransform},
			},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("agent-sandbox's controller manager: %w", err)
	}
	steps := []struct {
		name  string
		setup func() error
	}{
		{"Sandbox", func() error {
			return (&sandboxcontrollers.SandboxReconciler{
				Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Recorder: mgr.GetEventRecorder("sandbox-controller"),
				Tracer: noTracer{}, ClusterDomain: "cluster.local",
			}).SetupWithManager(mgr, 100)
		}},
		{"SandboxClaim", func() error {
			return (&extensionscontrollers.SandboxClaimReconciler{
				Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Scheme: mgr.GetScheme(),
				WarmSandboxQueue: queue.NewSimpleSandboxQueue(), Recorder: mgr.GetEventRecorder("sandboxclaim-controller"),
				Tracer: noTracer{},
			}).SetupWithManager(mgr, 50)
		}},
		{"SandboxTemplate", func() error {
			return (&extensionscontrollers.SandboxTemplateReconciler{
				Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Recorder: mgr.GetEventRecorder("sandboxtemplate-controller"),
				Tracer: noTracer{},
			}).SetupWithManager(mgr, 1)
		}},
		{"SandboxWarmPool", func() error {
			return (&extensionscontrollers.SandboxWarmPoolReconciler{
				Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Recorder: mgr.GetEventRecorder("sandboxwarmpool-controller"),
				MaxBatchSize: 300, EnableWarmPoolEviction: true,
				ReadinessGracePeriod:         extensionscontrollers.DefaultWarmPoolReadinessGracePeriod,
				UnschedulableRecheckInterval: extensionscontrollers.DefaultUnschedulableRecheckInterval,
			}).SetupWithManager(mgr, 1)
		}},
	}
	for _, s := range steps {
		if err := s.setup(); err != nil {
			return nil, fmt.Errorf("agent-sandbox's %s controller: %w", s.name, err)
		}
	}
	ch := make(chan error, 1)
	go func() { ch <- mgr.Start(ctx) }()
	return ch, nil
}

// noTracer is agent-sandbox's no-op instrumenter (internal/metrics's
// NewNoOp, which a test outside the module cannot import): the
// controllers' Tracer with tracing off.
type noTracer struct{}

func (noTracer) StartSpan(ctx context.Context, _ metav1.Object, _ string, _ map[string]string) (context.Context, func()) {
	return ctx, func() {}
}
func (noTracer) GetTraceContext(context.Context) string              { return "" }
func (noTracer) AddEvent(context.Context, string, map[string]string) {}
func (noTracer) IsRecording(context.Context) bool                    { return false }
