package kubernetes

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// Check is one line of `sandpiper doctor`'s report.
type Check struct {
	Name   string
	OK     bool
	Warn   bool // passed, with something to look at
	Detail string
}

// doctorCode is the run Doctor makes: the answer, and where it ran.
const doctorCode = "import os\nprint(6 * 7)\nprint(os.getcwd())"

// Doctor checks, in order, what a run needs of the cluster, and stops at
// the first failure: the API server answers; agent-sandbox's CRDs are
// installed; the bot may create, watch and delete claims and read
// sandboxes and the pool (SelfSubjectAccessReview); the warm pool exists
// and how many of its sandboxes are ready; and one real run, from claim
// to deletion.
func Doctor(ctx context.Context, cfg Config) []Check {
	var checks []Check
	fail := func(name string, err error) []Check {
		return append(checks, Check{Name: name, Detail: err.Error()})
	}
	pass := func(name, detail string) { checks = append(checks, Check{Name: name, OK: true, Detail: detail}) }

	s, err := newSandbox(cfg)
	if err != nil {
		return fail("kubernetes cluster", err)
	}
	defer s.Close()
	v, err := s.k8s.version(ctx)
	if err != nil {
		return fail("kubernetes cluster", err)
	}
	pass("kubernetes cluster", fmt.Sprintf("Kubernetes %s at %s", v, s.k8s.where()))

	missing, err := s.k8s.missingResources(ctx)
	switch {
	case err != nil:
		return fail("kubernetes CRDs", err)
	case len(missing) > 0:
		return fail("kubernetes CRDs", fmt.Errorf("%w: the cluster serves no %s; %s", ErrNoCRDs, strings.Join(missing, ", "), crdHint))
	}
	pass("kubernetes CRDs", "agent-sandbox's "+apiVersion+" sandboxes, sandboxclaims, sandboxwarmpools and sandboxtemplates are served")

	denied, err := s.k8s.denied(ctx)
	switch {
	case err != nil:
		return fail("kubernetes RBAC", err)
	case len(denied) > 0:
		return fail("kubernetes RBAC", fmt.Errorf("%w: may not %s; %s", ErrForbidden, strings.Join(denied, ", "), rbacHint))
	}
	var may []string
	for _, a := range needed {
		may = append(may, a.verb+" "+a.res.Resource)
	}
	pass("kubernetes RBAC", "may "+strings.Join(may, ", ")+" in namespace "+s.k8s.namespace)

	p, err := s.k8s.pool(ctx, s.cfg.WarmPool)
	if err != nil {
		return fail("kubernetes warm pool", err)
	}
	want := int32(1)
	if p.Spec.Replicas != nil {
		want = *p.Spec.Replicas
	}
	pool := fmt.Sprintf("%s (template %s): %d of %d sandboxes ready", s.cfg.WarmPool, p.Spec.SandboxTemplateRef.Name, p.Status.ReadyReplicas, want)
	if p.Status.ReadyReplicas == 0 {
		checks = append(checks, Check{Name: "kubernetes warm pool", OK: true, Warn: true,
			Detail: fmt.Sprintf("%s; each run waits for a sandbox to start, up to %s (SANDPIPER_KUBERNETES_READY_TIMEOUT)", pool, s.cfg.ReadyTimeout)})
	} else {
		pass("kubernetes warm pool", pool)
	}

	var ready time.Duration
	s.onReady = func(d time.Duration) { ready = d }
	res, err := s.Run(ctx, sandbox.Request{Code: doctorCode})
	if err != nil {
		return fail("kubernetes run", err)
	}
	out := strings.Fields(string(res.Stdout))
	if res.ExitCode != 0 || len(out) != 2 || out[0] != "42" {
		return fail("kubernetes run", fmt.Errorf("print(6 * 7) gave exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr))
	}
	detail := fmt.Sprintf("claimed a ready sandbox in %s; print(6 * 7) → 42 in %s in all; the claim is deleted",
		ready.Round(time.Millisecond), res.Duration.Round(time.Millisecond))
	if out[1] != sandbox.WorkDir {
		checks = append(checks, Check{Name: "kubernetes run", OK: true, Warn: true,
			Detail: fmt.Sprintf("%s; but programs run in %s, not %s: start sandboxd with --root-dir=%s (see sandbox/kubernetes/deploy/sandbox-template.yaml)", detail, out[1], sandbox.WorkDir, sandbox.WorkDir)})
		return checks
	}
	pass("kubernetes run", detail)
	return checks
}
