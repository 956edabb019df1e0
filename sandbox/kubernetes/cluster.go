package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Errors that say what is wrong with the cluster, for errors.Is. The
// errors returned wrap them with the detail and what to do.
var (
	// ErrNoCluster: no kubeconfig was found, and the bot does not run in
	// a pod.
	ErrNoCluster = errors.New("no cluster configured")
	// ErrUnreachable: the API server did not answer.
	ErrUnreachable = errors.New("cannot reach the cluster")
	// ErrNoCRDs: agent-sandbox's CRDs are not installed.
	ErrNoCRDs = errors.New("agent-sandbox's CRDs are not installed")
	// ErrForbidden: the bot's identity may not do what a run needs.
	ErrForbidden = errors.New("forbidden")
	// ErrNoWarmPool: the configured SandboxWarmPool does not exist.
	ErrNoWarmPool = errors.New("no such warm pool")
	// ErrNotReady: no sandbox became ready within Config.ReadyTimeout.
	ErrNotReady = errors.New("no sandbox became ready")
)

// rbacHint is what to do about ErrForbidden.
const rbacHint = "give the bot's identity the Role in sandbox/kubernetes/deploy/rbac.yaml"

// crdHint is what to do about ErrNoCRDs.
const crdHint = "install agent-sandbox v1.0.1 with its extensions (its CRDs are in the module sigs.k8s.io/agent-sandbox, k8s/crds/), and its controller"

// cluster is the API server, as the bot's identity reaches it.
type cluster struct {
	host      string // the API server's URL, for messages
	namespace string // the claims'
	context   string // the kubeconfig context; "" in a pod
	dyn       dynamic.Interface
	http      *http.Client // authenticated; for discovery
	base      string       // the API server's URL, for http
}

// connect loads the client configuration: cfg.Kubeconfig (or the
// KUBECONFIG rules and ~/.kube/config), else the pod's own service
// account. It sends no request.
func connect(cfg Config) (*cluster, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	switch paths := filepath.SplitList(cfg.Kubeconfig); len(paths) {
	case 0:
	case 1:
		rules.ExplicitPath = paths[0] // must exist
	default:
		rules.Precedence = paths
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: cfg.Context})
	rc, err := cc.ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, fmt.Errorf("kubernetes: %w: the bot is not in a pod (KUBERNETES_SERVICE_HOST is unset) and found no kubeconfig (SANDPIPER_KUBERNETES_KUBECONFIG, KUBECONFIG, ~/.kube/config)", ErrNoCluster)
		}
		return nil, fmt.Errorf("kubernetes: load the client configuration: %w", err)
	}
	c := &cluster{host: rc.Host, namespace: cfg.Namespace, context: cfg.Context}
	if c.namespace == "" {
		if c.namespace, _, err = cc.Namespace(); err != nil {
			return nil, fmt.Errorf("kubernetes: the namespace: %w", err)
		}
	}
	if c.context == "" {
		if raw, err := cc.RawConfig(); err == nil {
			c.context = raw.CurrentContext
		}
	}
	rc = rest.CopyConfig(rc)
	rc.UserAgent = "sandpiper (github.com/sandpiper-bot/sandpiper/sandbox/kubernetes)"
	// Runs come in bursts (20 questions at once make 60 requests);
	// client-go's default of 5 a second would queue them.
	rc.QPS, rc.Burst = 50, 100
	if c.http, err = rest.HTTPClientFor(rc); err != nil {
		return nil, fmt.Errorf("kubernetes: the client configuration: %w", err)
	}
	if c.dyn, err = dynamic.NewForConfigAndClient(rc, c.http); err != nil {
		return nil, fmt.Errorf("kubernetes: the client configuration: %w", err)
	}
	u, _, err := rest.DefaultServerUrlFor(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: the API server's address %q: %w", rc.Host, err)
	}
	c.base = strings.TrimRight(u.String(), "/")
	return c, nil
}

// where names the cluster and namespace, for messages.
func (c *cluster) where() string {
	if c.context != "" {
		return fmt.Sprintf("%s (context %s), namespace %s", c.host, c.context, c.namespace)
	}
	return fmt.Sprintf("%s, namespace %s", c.host, c.namespace)
}

// explain turns an API error into one that says what is wrong and what
// to do; op is what was being done ("create a claim").
func (c *cluster) explain(ctx context.Context, op string, err error) error {
	var status apierrors.APIStatus
	isStatus := errors.As(err, &status)
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("kubernetes: %s: %w", op, context.Cause(ctx))
	case apierrors.IsForbidden(err):
		return fmt.Errorf("kubernetes: %s: %w: %s; %s", op, ErrForbidden, status.Status().Message, rbacHint)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("kubernetes: %s: the cluster at %s refused the bot's credentials (%v); check the kubeconfig or the pod's service account", op, c.host, err)
	case !isStatus:
		return fmt.Errorf("kubernetes: %s: %w at %s: %v", op, ErrUnreachable, c.host, err)
	case apierrors.IsNotFound(err):
		if missing, derr := c.missingResources(ctx); derr == nil && len(missing) > 0 {
			return fmt.Errorf("kubernetes: %s: %w: the cluster at %s serves no %s; %s", op, ErrNoCRDs, c.host, strings.Join(missing, ", "), crdHint)
		}
	}
	return fmt.Errorf("kubernetes: %s: %w", op, err)
}

// missingResources lists the agent-sandbox resources the API server does
// not serve, as resource.group.
func (c *cluster) missingResources(ctx context.Context) ([]string, error) {
	want := []schema.GroupVersionResource{claimsResource, poolsResource, templatesResource, sandboxesResource}
	served := map[schema.GroupVersion][]string{}
	var missing []string
	for _, r := range want {
		gv := r.GroupVersion()
		names, ok := served[gv]
		if !ok {
			var err error
			if names, err = c.resources(ctx, gv); err != nil {
				return nil, err
			}
			served[gv] = names
		}
		if !slices.Contains(names, r.Resource) {
			missing = append(missing, r.Resource+"."+r.Group)
		}
	}
	return missing, nil
}

// resources lists the resources the API server serves in gv: none when it
// does not serve gv at all.
func (c *cluster) resources(ctx context.Context, gv schema.GroupVersion) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/apis/"+gv.Group+"/"+gv.Version, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w at %s: %v", ErrUnreachable, c.host, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch {
	case err != nil:
		return nil, err
	case resp.StatusCode == http.StatusNotFound:
		return nil, nil
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("GET /apis/%s: %s", gv, resp.Status)
	}
	var list metav1.APIResourceList
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("GET /apis/%s: %w", gv, err)
	}
	var names []string
	for _, r := range list.APIResources {
		names = append(names, r.Name)
	}
	return names, nil
}

// access is one thing a run needs to be allowed to do.
type access struct {
	verb string
	res  schema.GroupVersionResource
}

// needed is what the bot does with agent-sandbox's resources, in its
// namespace: deploy/rbac.yaml grants exactly this.
var needed = []access{
	{"create", claimsResource}, {"get", claimsResource}, {"watch", claimsResource}, {"delete", claimsResource},
	{"get", sandboxesResource}, {"watch", sandboxesResource},
	{"get", poolsResource},
}

var accessReviews = schema.GroupVersionResource{Group: "authorization.k8s.io", Version: "v1", Resource: "selfsubjectaccessreviews"}

// denied asks the API server (SelfSubjectAccessReview, which every
// authenticated identity may create) which of needed the bot's identity
// may not do, as "verb resource" with the server's reason.
func (c *cluster) denied(ctx context.Context) ([]string, error) {
	var out []string
	for _, a := range needed {
		review := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "authorization.k8s.io/v1",
			"kind":       "SelfSubjectAccessReview",
			"spec": map[string]any{"resourceAttributes": map[string]any{
				"namespace": c.namespace, "verb": a.verb, "group": a.res.Group, "resource": a.res.Resource,
			}},
		}}
		got, err := c.dyn.Resource(accessReviews).Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return nil, c.explain(ctx, "review the bot's access", err)
		}
		allowed, _, _ := unstructured.NestedBool(got.Object, "status", "allowed")
		if !allowed {
			d := a.verb + " " + a.res.Resource
			if reason, _, _ := unstructured.NestedString(got.Object, "status", "reason"); reason != "" {
				d += " (" + reason + ")"
			}
			out = append(out, d)
		}
	}
	return out, nil
}

// pool reads the warm pool.
func (c *cluster) pool(ctx context.Context, name string) (*warmPool, error) {
	u, err := c.dyn.Resource(poolsResource).Namespace(c.namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			if missing, derr := c.missingResources(ctx); derr == nil && len(missing) > 0 {
				return nil, c.explain(ctx, "read the warm pool", err)
			}
			return nil, fmt.Errorf("kubernetes: %w: no SandboxWarmPool %q in %s (kubectl get sandboxwarmpools -n %s; one is in sandbox/kubernetes/deploy/)", ErrNoWarmPool, name, c.where(), c.namespace)
		}
		return nil, c.explain(ctx, "read the warm pool", err)
	}
	var p warmPool
	if err := fromUnstructured(u, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// version is the API server's version (GET /version).
func (c *cluster) version(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/version", nil)
	if err != nil {
		return "", err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return "", context.Cause(ctx)
		}
		return "", fmt.Errorf("kubernetes: %w at %s: %v", ErrUnreachable, c.host, err)
	}
	defer resp.Body.Close()
	var v struct {
		GitVersion string `json:"gitVersion"`
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return "", fmt.Errorf("kubernetes: the cluster at %s refused the bot's credentials (%s); check the kubeconfig or the pod's service account", c.host, resp.Status)
	case resp.StatusCode != http.StatusOK:
		return "", fmt.Errorf("kubernetes: GET %s/version: %s", c.host, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&v); err != nil {
		return "", fmt.Errorf("kubernetes: GET %s/version: %w", c.host, err)
	}
	return v.GitVersion, nil
}
