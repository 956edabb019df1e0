package sandbox

// Backend names, as SANDPIPER_SANDBOX spells them: the one place they are
// written.
const (
	BackendLocal      = "local"      // package local: namespaces on this host
	BackendVercel     = "vercel"     // package vercel: a Vercel Sandbox microVM
	BackendKubernetes = "kubernetes" // package kubernetes: agent-sandbox on a cluster
)

// Backends lists every backend's name, the default first. A binary may
// link only some of them (sandpiper-exec leaves the cluster's out).
var Backends = []string{BackendLocal, BackendVercel, BackendKubernetes}

// Info is what a backend says of itself, as configured: its name, the
// limits a run gets, which of them it does not enforce, and whether it
// keeps state. Front ends ask for it (a backend's Info method) instead of
// keeping a copy of the limits they gave it.
type Info struct {
	// Backend is the backend's name, one of [Backends].
	Backend string
	// Limits are the limits of a run whose request sets none, every field
	// set; a request's non-zero fields win (see [Limits.Or]).
	Limits Limits
	// Unenforced names the fields of Limits that this backend, as
	// configured, does not bound for a run, each with why: a run may pass
	// them. The others are enforced, and a run ended by one reports it in
	// [Result.Limit].
	Unenforced []Unenforced
	// KeepsState is set when the backend runs a request's KeepState:
	// restores [Request.State] and reports the state saved in
	// [Result.State]. Without it, a request's state is ignored.
	KeepsState bool
}

// Unenforced is a field of [Limits] a backend does not bound.
type Unenforced struct {
	Field string // the field's name: "CPUs", "Processes"
	Why   string // what bounds it instead, or why nothing does
}

// Enforces reports whether the backend bounds the field of Limits named
// field ("CPUs", "Processes", ...), and when it does not, why.
func (i Info) Enforces(field string) (ok bool, why string) {
	for _, u := range i.Unenforced {
		if u.Field == field {
			return false, u.Why
		}
	}
	return true, ""
}
