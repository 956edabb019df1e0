package kubernetes

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// auditPolicy has the API server log, once each as it is answered, the
// requests of service accounts: the bots' identities in the tests (the
// controller and the test's admin are not logged).
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
    userGroups: ["system:serviceaccounts"]
  - level: None
`

// configureAudit has env's API server write its audit log, of auditPolicy,
// to a file in a directory of its own, and returns the file's path.
func configureAudit(env *envtest.Environment) (string, error) {
	dir, err := os.MkdirTemp("", "sandpiper-audit-")
	if err != nil {
		return "", err
	}
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	log := filepath.Join(dir, "audit.log")
	env.ControlPlane.GetAPIServer().Configure().
		Set("audit-policy-file", policy).
		Set("audit-log-path", log).
		Set("audit-log-format", "json").
		Set("audit-log-mode", "blocking")
	return log, nil
}

// audited reads the audit log: what user did, as "verb resource.group"
// for a namespaced resource in namespace ns ("verb resource" in the core
// group, with "/subresource"), "verb resource.group (cluster)" for a
// cluster-scoped one and "verb URL" for a request to no resource.
func audited(t testing.TB, user, ns string) []string {
	t.Helper()
	f, err := os.Open(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev struct {
			User struct {
				Username string `json:"username"`
			} `json:"user"`
			Verb       string `json:"verb"`
			RequestURI string `json:"requestURI"`
			ObjectRef  *struct {
				Resource    string `json:"resource"`
				Subresource string `json:"subresource"`
				Namespace   string `json:"namespace"`
				APIGroup    string `json:"apiGroup"`
			} `json:"objectRef"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("the audit log: %v", err)
		}
		if ev.User.Username != user {
			continue
		}
		var a string
		switch r := ev.ObjectRef; {
		case r == nil:
			path, _, _ := strings.Cut(ev.RequestURI, "?")
			a = ev.Verb + " " + path
		default:
			a = ev.Verb + " " + grant(r.APIGroup, r.Resource, r.Subresource)
			if r.Namespace == "" {
				a += " (cluster)"
			} else if r.Namespace != ns {
				a += " (namespace " + r.Namespace + ")"
			}
		}
		seen[a] = true
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	var out []string
	for a := range seen {
		out = append(out, a)
	}
	slices.Sort(out)
	return out
}

// grant names a resource as the comparison does: resource[/sub][.group].
func grant(group, resource, sub string) string {
	if sub != "" {
		resource += "/" + sub
	}
	if group != "" {
		resource += "." + group
	}
	return resource
}

// roleGrants reads the Role of deploy/rbac.yaml as "verb resource.group",
// failing t on a wildcard or a rule narrowed to names (neither can be
// compared with what the bot does).
func roleGrants(t testing.TB) []string {
	t.Helper()
	b, err := os.ReadFile("deploy/rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var out []string
	var roles int
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatal(err)
		}
		if u.GetKind() != "Role" && u.GetKind() != "ClusterRole" {
			continue
		}
		roles++
		if u.GetKind() == "ClusterRole" {
			t.Errorf("deploy/rbac.yaml has a ClusterRole, %s: the bot needs nothing outside its namespace", u.GetName())
		}
		rules, _, _ := unstructured.NestedSlice(u.Object, "rules")
		for _, r := range rules {
			rule, _ := r.(map[string]any)
			strs := func(k string) []string {
				v, _, _ := unstructured.NestedStringSlice(rule, k)
				return v
			}
			if len(strs("resourceNames")) > 0 || len(strs("nonResourceURLs")) > 0 {
				t.Errorf("deploy/rbac.yaml: a rule with resourceNames or nonResourceURLs: %v", rule)
			}
			for _, g := range strs("apiGroups") {
				for _, res := range strs("resources") {
					for _, v := range strs("verbs") {
						if g == "*" || res == "*" || v == "*" {
							t.Errorf("deploy/rbac.yaml grants a wildcard: %v", rule)
						}
						name, sub, _ := strings.Cut(res, "/")
						out = append(out, v+" "+grant(g, name, sub))
					}
				}
			}
		}
	}
	if roles != 1 {
		t.Fatalf("deploy/rbac.yaml has %d Roles, want one", roles)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// everyone is what the bot does beyond its Role, which the cluster's
// default ClusterRoles grant every authenticated identity: ask what it
// may do (system:basic-user), the API server's version and discovery of
// agent-sandbox's groups (system:discovery, system:public-info-viewer).
var everyone = []string{
	"create selfsubjectaccessreviews.authorization.k8s.io (cluster)",
	"get /apis/agents.x-k8s.io/v1beta1",
	"get /apis/extensions.agents.x-k8s.io/v1beta1",
	"get /version",
}

// TestRoleGrantsWhatTheBackendUses compares the shipped Role with the
// requests the bot's identity makes, as the API server's audit log
// records them, both ways: a Role that grants more (secrets, pods/exec)
// fails, and so does one that grants less. What the bot does is what
// New, a run and Doctor do (a run follows its claim and its sandbox,
// and an error reads the pool, as New does); the doctor's RBAC check
// (needed) must ask for the same grants.
func TestRoleGrantsWhatTheBackendUses(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, poolOptions{replicas: 1})
	user := "system:serviceaccount:" + ns.name + ":sandpiper"
	s := ns.backend(t, nil)
	if res, err := s.Run(t.Context(), sandbox.Request{Code: "print(6 * 7)"}); err != nil || strings.TrimSpace(string(res.Stdout)) != "42" {
		t.Fatalf("Run: %v", err)
	}
	for _, c := range Doctor(t.Context(), ns.config(t)) {
		if !c.OK {
			t.Fatalf("doctor: %s: %s", c.Name, c.Detail)
		}
	}
	var used []string
	eventually(t, 10*time.Second, "the bot's last claim's deletion in the audit log", func() bool {
		used = audited(t, user, ns.name)
		return slices.Contains(used, "delete sandboxclaims.extensions.agents.x-k8s.io")
	})
	var inRole []string
	for _, a := range used {
		if !slices.Contains(everyone, a) {
			inRole = append(inRole, a)
		}
	}
	granted := roleGrants(t)
	for _, a := range inRole {
		if !slices.Contains(granted, a) {
			t.Errorf("the bot did %q, which deploy/rbac.yaml's Role does not grant", a)
		}
	}
	for _, g := range granted {
		if !slices.Contains(inRole, g) {
			t.Errorf("deploy/rbac.yaml's Role grants %q, which the bot never did: least privilege says remove it", g)
		}
	}
	var asked []string
	for _, a := range needed {
		asked = append(asked, a.verb+" "+grant(a.res.Group, a.res.Resource, ""))
	}
	slices.Sort(asked)
	if !slices.Equal(asked, granted) {
		t.Errorf("doctor checks %q; deploy/rbac.yaml's Role grants %q", asked, granted)
	}
	t.Logf("the bot did: %q", used)
}
