package kubernetes

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The parts of agent-sandbox's API (sigs.k8s.io/agent-sandbox v1.0.1,
// api/v1beta1 and extensions/api/v1beta1) the backend reads and writes,
// as small structs of its own: its Go types would bring in k8s.io/api's
// PodSpec and the scheme machinery for four fields.

// Groups and versions of agent-sandbox's resources.
const (
	sandboxGroup    = "agents.x-k8s.io"
	extensionsGroup = "extensions.agents.x-k8s.io"
	apiVersion      = "v1beta1"
)

var (
	claimsResource    = schema.GroupVersionResource{Group: extensionsGroup, Version: apiVersion, Resource: "sandboxclaims"}
	poolsResource     = schema.GroupVersionResource{Group: extensionsGroup, Version: apiVersion, Resource: "sandboxwarmpools"}
	templatesResource = schema.GroupVersionResource{Group: extensionsGroup, Version: apiVersion, Resource: "sandboxtemplates"}
	sandboxesResource = schema.GroupVersionResource{Group: sandboxGroup, Version: apiVersion, Resource: "sandboxes"}
)

// Labels and annotations the backend puts on its claims.
const (
	// managedByLabel marks the claims sandpiper made (the value is
	// "sandpiper"), so that an operator can list them.
	managedByLabel = "app.kubernetes.io/managed-by"
	managedBy      = "sandpiper"
	// createdByLabel is agent-sandbox's own label for the client that made
	// a claim; its metrics are broken down by it.
	createdByLabel = "agents.x-k8s.io/created-by"
)

// claim is a SandboxClaim.
type claim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              claimSpec   `json:"spec"`
	Status            claimStatus `json:"status,omitzero"`
}

type claimSpec struct {
	WarmPoolRef struct {
		Name string `json:"name"`
	} `json:"warmPoolRef"`
	Lifecycle *claimLifecycle `json:"lifecycle,omitempty"`
}

// claimLifecycle is when agent-sandbox's claim controller ends a claim
// on its own: at ShutdownTime, deleting it (and so its sandbox) with the
// Delete policy.
type claimLifecycle struct {
	ShutdownTime   *metav1.Time `json:"shutdownTime,omitempty"`
	ShutdownPolicy string       `json:"shutdownPolicy,omitempty"`
}

type claimStatus struct {
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	Sandbox    struct {
		Name   string   `json:"name,omitempty"`
		PodIPs []string `json:"podIPs,omitempty"`
	} `json:"sandbox,omitzero"`
}

// sandboxObject is a Sandbox.
type sandboxObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Status            struct {
		Conditions []metav1.Condition `json:"conditions,omitempty"`
		PodIPs     []string           `json:"podIPs,omitempty"`
	} `json:"status,omitzero"`
}

// warmPool is a SandboxWarmPool.
type warmPool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Replicas           *int32 `json:"replicas,omitempty"`
		SandboxTemplateRef struct {
			Name string `json:"name"`
		} `json:"sandboxTemplateRef"`
	} `json:"spec"`
	Status struct {
		Replicas      int32 `json:"replicas,omitempty"`
		ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	} `json:"status,omitzero"`
}

// Condition types and reasons of agent-sandbox's that the backend acts on.
const (
	conditionReady = "Ready"
	// A claim's Ready condition with one of these reasons will not become
	// true by waiting.
	reasonWarmPoolNotFound = "WarmPoolNotFound"
	reasonTemplateNotFound = "TemplateNotFound"
)

// ready returns the Ready condition of conds, if any.
func ready(conds []metav1.Condition) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == conditionReady {
			return &conds[i]
		}
	}
	return nil
}

// isReady reports whether conds hold Ready=True.
func isReady(conds []metav1.Condition) bool {
	c := ready(conds)
	return c != nil && c.Status == metav1.ConditionTrue
}

// describeReady says what conds' Ready condition says, for an error.
func describeReady(conds []metav1.Condition) string {
	c := ready(conds)
	switch {
	case c == nil:
		return "no Ready condition yet"
	case c.Message != "":
		return fmt.Sprintf("Ready=%s, %s: %s", c.Status, c.Reason, c.Message)
	}
	return fmt.Sprintf("Ready=%s, %s", c.Status, c.Reason)
}

// fromUnstructured decodes an object the dynamic client returned.
func fromUnstructured(u *unstructured.Unstructured, v any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), v); err != nil {
		return fmt.Errorf("kubernetes: decode %s %q: %w", u.GetKind(), u.GetName(), err)
	}
	return nil
}

// toUnstructured encodes v for the dynamic client.
func toUnstructured(v any) (*unstructured.Unstructured, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		return nil, err
	}
	return u, nil
}
