package kubernetes

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// lease is a claimed sandbox that is ready: its SandboxClaim, the
// Sandbox bound to it and its pod's address.
type lease struct {
	claim   string
	sandbox string
	podIP   string
	rv      string // the Sandbox's resourceVersion when it was found ready
}

// errReadyTimeout ends the wait for a sandbox at Config.ReadyTimeout.
var errReadyTimeout = errors.New("ready timeout")

// claimName makes a claim's name on this side, so that a claim whose
// creation was sent but not answered can still be deleted by its name.
func claimName() string {
	const digits = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 10)
	rand.Read(b)
	for i := range b {
		b[i] = digits[int(b[i])%len(digits)]
	}
	return "sandpiper-" + string(b)
}

// create makes the SandboxClaim name from the warm pool. Its
// shutdownTime, lifetime from now, is the backstop: should the bot not
// delete the claim (it crashed, the API was down), agent-sandbox's claim
// controller deletes it, and with it the sandbox, then.
func (s *Sandbox) create(ctx context.Context, name string, lifetime time.Duration) error {
	c := claim{
		TypeMeta: metav1.TypeMeta{APIVersion: extensionsGroup + "/" + apiVersion, Kind: "SandboxClaim"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: s.k8s.namespace,
			Labels:    map[string]string{managedByLabel: managedBy, createdByLabel: managedBy},
		},
	}
	c.Spec.WarmPoolRef.Name = s.cfg.WarmPool
	// metav1.Time is written to the second: round up, so that the claim
	// never ends before the run's lifetime.
	end := metav1.NewTime(time.Now().Add(lifetime + time.Second).Truncate(time.Second))
	c.Spec.Lifecycle = &claimLifecycle{ShutdownTime: &end, ShutdownPolicy: "Delete"}
	u, err := toUnstructured(&c)
	if err != nil {
		return fmt.Errorf("kubernetes: encode the claim: %w", err)
	}
	if _, err := s.k8s.dyn.Resource(claimsResource).Namespace(s.k8s.namespace).Create(ctx, u, metav1.CreateOptions{}); err != nil {
		return s.k8s.explain(ctx, "create a SandboxClaim", err)
	}
	return nil
}

// await waits for the claim name to be bound to a sandbox and for that
// sandbox to be ready, up to Config.ReadyTimeout, as agent-sandbox's own
// client does: the claim's status names the sandbox, whose Ready
// condition and pod IPs say when and where it can be used. A sandbox
// deleted before it is ready (an operator, a node drained, its pod
// evicted) is not the end of the wait: agent-sandbox's claim controller
// binds the claim to another, adopted from the pool or started cold
// (under the claim's name again), and the wait follows the claim to it.
func (s *Sandbox) await(ctx context.Context, name string) (*lease, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, s.cfg.ReadyTimeout, errReadyTimeout)
	defer cancel()
	l := &lease{claim: name}
	var state string // the claim's or sandbox's Ready condition, for a timeout
	for {
		err := s.k8s.follow(ctx, claimsResource, name, func(u *unstructured.Unstructured) (bool, error) {
			if u == nil {
				return false, fmt.Errorf("kubernetes: the SandboxClaim %s was deleted before a sandbox was ready", name)
			}
			var c claim
			if err := fromUnstructured(u, &c); err != nil {
				return false, err
			}
			if l.sandbox = c.Status.Sandbox.Name; l.sandbox != "" {
				return true, nil
			}
			state = describeReady(c.Status.Conditions)
			if r := ready(c.Status.Conditions); r != nil && (r.Reason == reasonWarmPoolNotFound || r.Reason == reasonTemplateNotFound) {
				return false, fmt.Errorf("kubernetes: the SandboxClaim %s cannot get a sandbox: %s", name, state)
			}
			return false, nil
		})
		if err != nil {
			return nil, s.notReady(ctx, err, l, state)
		}
		var deleted bool
		err = s.k8s.follow(ctx, sandboxesResource, l.sandbox, func(u *unstructured.Unstructured) (bool, error) {
			if u == nil {
				deleted = true
				return true, nil
			}
			var sb sandboxObject
			if err := fromUnstructured(u, &sb); err != nil {
				return false, err
			}
			state = "Sandbox " + l.sandbox + ": " + describeReady(sb.Status.Conditions)
			if isReady(sb.Status.Conditions) && len(sb.Status.PodIPs) > 0 {
				l.podIP, l.rv = sb.Status.PodIPs[0], sb.ResourceVersion
				return true, nil
			}
			return false, nil
		})
		switch {
		case err != nil:
			return nil, s.notReady(ctx, err, l, state)
		case !deleted:
			return l, nil
		}
		// The claim names the deleted sandbox until the controller has
		// bound it again: look again in a moment.
		state = "Sandbox " + l.sandbox + " was deleted before it was ready"
		s.log.DebugContext(ctx, "sandbox: the claim's sandbox was deleted before it was ready; waiting for another", "claim", name, "sandbox", l.sandbox)
		select {
		case <-ctx.Done():
			return nil, s.notReady(ctx, context.Cause(ctx), l, state)
		case <-time.After(rebindPoll):
		}
	}
}

// notReady explains a wait that ended at the ready timeout: how the warm
// pool stands, and what the claim or sandbox said last. Other errors pass.
func (s *Sandbox) notReady(ctx context.Context, err error, l *lease, state string) error {
	if !errors.Is(err, errReadyTimeout) {
		return err
	}
	var why []string
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if p, perr := s.k8s.pool(pctx, s.cfg.WarmPool); perr == nil {
		want := int32(1)
		if p.Spec.Replicas != nil {
			want = *p.Spec.Replicas
		}
		why = append(why, fmt.Sprintf("warm pool %s has %d of %d sandboxes ready", s.cfg.WarmPool, p.Status.ReadyReplicas, want))
	}
	if state != "" {
		why = append(why, fmt.Sprintf("claim %s: %s", l.claim, state))
	}
	secs := int(math.Round(s.cfg.ReadyTimeout.Seconds()))
	return fmt.Errorf("kubernetes: %w in %d s (%s); the wait is SANDPIPER_KUBERNETES_READY_TIMEOUT", ErrNotReady, secs, strings.Join(why, "; "))
}

// watchGone calls gone, once, when the lease's sandbox is deleted or
// stops being ready, until ctx ends.
func (s *Sandbox) watchGone(ctx context.Context, l *lease, gone func(why string)) {
	err := s.k8s.followFrom(ctx, sandboxesResource, l.sandbox, l.rv, func(u *unstructured.Unstructured) (bool, error) {
		if u == nil {
			gone("was deleted")
			return true, nil
		}
		var sb sandboxObject
		if err := fromUnstructured(u, &sb); err != nil {
			return false, err
		}
		if !isReady(sb.Status.Conditions) {
			gone("stopped being ready (" + describeReady(sb.Status.Conditions) + ")")
			return true, nil
		}
		return false, nil
	})
	if err != nil && ctx.Err() == nil {
		s.log.Warn("sandbox: watching the sandbox during the run failed; a deleted sandbox shows as a broken connection", "sandbox", l.sandbox, "err", err)
	}
}

// release deletes the claim, whatever ended the run, and agent-sandbox
// deletes its sandbox and pod. It retries for releaseTimeout on a
// context of its own; a claim it cannot delete is counted as leaked and
// ends at its shutdownTime. created says the claim is known to exist;
// otherwise one not found was never made, and is not counted.
func (s *Sandbox) release(ctx context.Context, name string, created bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	background := metav1.DeletePropagationBackground
	var err error
retry:
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		err = s.k8s.dyn.Resource(claimsResource).Namespace(s.k8s.namespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &background})
		switch {
		case err == nil || created && apierrors.IsNotFound(err):
			s.metrics.claims.WithLabelValues("cleaned").Inc()
			return
		case apierrors.IsNotFound(err):
			return
		case apierrors.IsForbidden(err):
			break retry
		}
		select {
		case <-ctx.Done():
			break retry
		case <-time.After(wait):
		}
	}
	s.metrics.claims.WithLabelValues("leaked").Inc()
	s.log.Error("sandbox: could not delete the SandboxClaim; agent-sandbox deletes it at its shutdownTime", "claim", name, "err", s.k8s.explain(ctx, "delete the claim", err))
}

// follow calls fn with the object name of res as it is now, and again at
// each change, until fn says it is done or fails, or ctx ends. fn gets
// nil once the object is deleted (or missing).
func (c *cluster) follow(ctx context.Context, res schema.GroupVersionResource, name string, fn func(*unstructured.Unstructured) (bool, error)) error {
	return c.followFrom(ctx, res, name, "", fn)
}

// followFrom is follow from resourceVersion rv, whose object fn has
// seen: only the changes after it are passed.
func (c *cluster) followFrom(ctx context.Context, res schema.GroupVersionResource, name, rv string, fn func(*unstructured.Unstructured) (bool, error)) error {
	client := c.dyn.Resource(res).Namespace(c.namespace)
	for {
		if rv == "" {
			u, err := client.Get(ctx, name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				_, err := fn(nil)
				return err
			case err != nil:
				return c.explain(ctx, "read "+res.Resource, err)
			}
			rv = u.GetResourceVersion()
			if done, err := fn(u); done || err != nil {
				return err
			}
		}
		w, err := client.Watch(ctx, metav1.ListOptions{
			FieldSelector:       "metadata.name=" + name,
			ResourceVersion:     rv,
			AllowWatchBookmarks: true,
		})
		if err != nil {
			return c.explain(ctx, "watch "+res.Resource, err)
		}
		var done bool
		rv, done, err = drain(w, rv, fn)
		w.Stop()
		if done || err != nil {
			return err
		}
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
	}
}

// drain passes w's events to fn until fn is done or fails, or w ends. It
// returns the resourceVersion to watch from next: "" to read the object
// again (the server no longer has rv's history).
func drain(w watch.Interface, rv string, fn func(*unstructured.Unstructured) (bool, error)) (string, bool, error) {
	for ev := range w.ResultChan() {
		switch ev.Type {
		case watch.Added, watch.Modified:
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			rv = u.GetResourceVersion()
			if done, err := fn(u); done || err != nil {
				return rv, done, err
			}
		case watch.Deleted:
			done, err := fn(nil)
			return rv, done || err == nil, err
		case watch.Bookmark:
			if u, ok := ev.Object.(*unstructured.Unstructured); ok {
				rv = u.GetResourceVersion()
			}
		case watch.Error:
			if apierrors.IsResourceExpired(apierrors.FromObject(ev.Object)) || apierrors.IsGone(apierrors.FromObject(ev.Object)) {
				return "", false, nil
			}
			return rv, false, fmt.Errorf("kubernetes: watch: %w", apierrors.FromObject(ev.Object))
		}
	}
	return rv, false, nil
}

// logClaim is the claim's attributes for the log.
func logClaim(l *lease) slog.Attr {
	return slog.Group("claim", "name", l.claim, "sandbox", l.sandbox, "pod_ip", l.podIP)
}
