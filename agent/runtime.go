package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// Runtime is what the sandbox's Python offers, as [ProbeRuntime] found it.
type Runtime struct {
	Python  string   // version, e.g. "3.11.2"; empty when unknown
	Modules []Module // importable third-party modules, in [ProbedModules] order
}

// Module is an importable third-party module.
type Module struct {
	Name    string // import name, e.g. "sklearn"
	Version string // may be empty
}

// Has reports whether the module with the import name is importable.
func (r Runtime) Has(name string) bool {
	for _, m := range r.Modules {
		if m.Name == name {
			return true
		}
	}
	return false
}

// Missing returns those of the import names the runtime lacks.
func (r Runtime) Missing(names ...string) []string {
	var missing []string
	for _, n := range names {
		if !r.Has(n) {
			missing = append(missing, n)
		}
	}
	return missing
}

// String lists the version and modules, e.g.
// "Python 3.11.2 with numpy 1.26.4, sympy 1.12".
func (r Runtime) String() string {
	var b strings.Builder
	b.WriteString("Python")
	if r.Python != "" {
		b.WriteString(" " + r.Python)
	}
	if len(r.Modules) == 0 {
		b.WriteString(" (standard library only)")
		return b.String()
	}
	b.WriteString(" with ")
	b.WriteString(r.moduleList())
	return b.String()
}

func (r Runtime) moduleList() string {
	names := make([]string, len(r.Modules))
	for i, m := range r.Modules {
		names[i] = strings.TrimSpace(m.Name + " " + m.Version)
	}
	return strings.Join(names, ", ")
}

// ProbedModules are the third-party modules [ProbeRuntime] looks for:
// import name and distribution name.
var ProbedModules = [][2]string{
	{"numpy", "numpy"},
	{"pandas", "pandas"},
	{"scipy", "scipy"},
	{"sympy", "sympy"},
	{"mpmath", "mpmath"},
	{"matplotlib", "matplotlib"},
	{"seaborn", "seaborn"},
	{"statsmodels", "statsmodels"},
	{"sklearn", "scikit-learn"},
	{"networkx", "networkx"},
	{"openpyxl", "openpyxl"},
	{"xlrd", "xlrd"},
	{"pyarrow", "pyarrow"},
	{"polars", "polars"},
	{"PIL", "pillow"},
	{"dateutil", "python-dateutil"},
	{"pytz", "pytz"},
	{"tabulate", "tabulate"},
}

// probeProgram prints the Python version and, for each module the
// sandbox's import system can find, its version, as JSON. It looks modules
// up rather than importing them, which would take seconds.
const probeProgram = `
import json, sys
from importlib import metadata, util
mods = json.loads(%q)
found = []
for name, dist in mods:
    try:
        if util.find_spec(name) is None:
            continue
    except BaseException:
        continue
    try:
        v = metadata.version(dist)
    except BaseException:
        v = ""
    if v == "0.0.0":  # some distributions' packaging leaves this
        v = ""
    found.append([name, v])
print(json.dumps({"python": "%%d.%%d.%%d" %% sys.version_info[:3], "modules": found}))
`

// ProbeRuntime runs a short program in the sandbox to learn its Python
// version and which of [ProbedModules] it can import. Call it once at
// start-up; it takes about as long as one sandbox run.
func ProbeRuntime(ctx context.Context, runner Runner) (Runtime, error) {
	mods, err := json.Marshal(ProbedModules)
	if err != nil {
		return Runtime{}, fmt.Errorf("agent: probe runtime: %w", err)
	}
	res, err := runner.Run(ctx, sandbox.Request{Code: fmt.Sprintf(probeProgram, mods)})
	if err != nil {
		return Runtime{}, fmt.Errorf("agent: probe the sandbox's Python: %w", err)
	}
	if v := res.Verdict(); v.Failed() {
		msg := v.Phrase
		if v.Kind == sandbox.VerdictExit {
			last := strings.TrimSpace(string(res.Stderr))
			if i := strings.LastIndexByte(last, '\n'); i >= 0 {
				last = last[i+1:] // the exception line of a traceback
			}
			msg += ": " + last
		}
		return Runtime{}, fmt.Errorf("agent: probe the sandbox's Python: %s", msg)
	}
	var out struct {
		Python  string      `json:"python"`
		Modules [][2]string `json:"modules"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(res.Stdout), &out); err != nil {
		return Runtime{}, fmt.Errorf("agent: probe the sandbox's Python: unexpected output %q: %w", clipString(string(res.Stdout), 200), err)
	}
	rt := Runtime{Python: out.Python}
	for _, m := range out.Modules {
		rt.Modules = append(rt.Modules, Module{Name: m[0], Version: m[1]})
	}
	return rt, nil
}

// describeExecuteCode writes the tool's description: what it does, what is
// kept between calls, what is installed, the limits and the result's
// shape.
func describeExecuteCode(rt Runtime, l sandbox.Limits, keepState bool) string {
	var b strings.Builder
	b.WriteString("Run Python code and get back what it printed. ")
	if keepState {
		b.WriteString("The code runs non-interactively, as `python3 -c <code>`, in a fresh sandbox that is thrown away afterwards, ")
		b.WriteString("but the variables, functions, classes and imports a call leaves at the top level are kept for the later calls of this conversation, as in a notebook: ")
		b.WriteString("a later call can use a DataFrame an earlier one loaded without loading it again. ")
		b.WriteString("The result's `state` lists the names kept (`kept`) and those that could not be kept, with why (`dropped`: open files, generators, sockets, values too large); define those again when you need them. ")
		b.WriteString("If `state.note` says state is off or nothing was saved, believe it. ")
	} else {
		b.WriteString("The code runs non-interactively, as `python3 -c <code>`, in a fresh sandbox that is thrown away afterwards: ")
		b.WriteString("no variables or imports carry over between calls (only the files in the working directory do), so every call must import and define all it uses. ")
	}
	b.WriteString("This is not a REPL and nothing is echoed: only what the program prints comes back. ")
	b.WriteString("A bare expression such as `5 + 5` shows nothing; write `print(5 + 5)`.\n\n")

	if rt.Python != "" {
		fmt.Fprintf(&b, "Python %s. ", rt.Python)
	}
	switch {
	case len(rt.Modules) > 0:
		fmt.Fprintf(&b, "Third-party modules available: %s; the rest is the standard library only. ", rt.moduleList())
	case rt.Python == "":
		// The probe failed: say nothing false.
		b.WriteString("Which third-party modules are installed is unknown: import what you need, and fall back to the standard library if the import fails. ")
	default:
		b.WriteString("Only the standard library is available: no numpy, pandas, sympy or other third-party modules. ")
	}
	b.WriteString("There is no network access, so nothing can be installed or downloaded.\n\n")

	fmt.Fprintf(&b, "Limits per run: %s of wall time, %s of memory, %s of output per stream (longer output is cut). ",
		l.Timeout, sandbox.FormatSize(l.Memory), sandbox.FormatSize(l.Output))
	fmt.Fprintf(&b, "The working directory is %s (%s writable).\n\n", sandbox.WorkDir, sandbox.FormatSize(l.DiskSize))

	fmt.Fprintf(&b, "Files: input files (attached by the user, or written by earlier runs) are in %s, listed in the user's message with a preview. ", sandbox.WorkDir)
	fmt.Fprintf(&b, "Files the program writes in %s are delivered to the user (images are shown in the conversation, other files attached) within limits on their size and number, and are there for later runs; names starting with '.' are not delivered. ", sandbox.WorkDir)
	b.WriteString("For a line, bar, area or pie chart, use the `chart` module (always importable): ")
	b.WriteString("`import chart; chart.line(x, {'sign-ups': y}, title='Weekly sign-ups', x_label='week', y_label='people')` (also `chart.bar` and `chart.area`, with one entry per series in the dict, and `chart.pie(labels, values, title=...)`). ")
	b.WriteString("It saves the chart as a PNG (its name is returned) and as data, so the conversation can show an interactive chart; keep to at most 20 categories, 6 series and labels of 20 characters for that, and give every chart a short title (at most 50 characters). ")
	if rt.Has("matplotlib") {
		b.WriteString("For any other chart, use matplotlib (it draws without a display) and save it with `plt.savefig('name.png', dpi=150, bbox_inches='tight', metadata={'Title': 'one sentence describing the chart'})`; the title becomes the image's alt text. Never call plt.show(). ")
	}
	b.WriteString("Write tables people may want as CSV (or XLSX). ")
	fmt.Fprintf(&b, "A CSV written in %s is also shown in the conversation as a table (the first rows and columns of a big one), so to show a pandas DataFrame, save it as CSV there (`df.to_csv('name.csv', index=False)`) rather than printing it whole. ", sandbox.WorkDir)
	b.WriteString("Use short descriptive file names, and do not write files nobody asked for.\n\n")

	b.WriteString("The result is JSON: `output` (stdout), `stderr`, `exitCode`, `files` (the files written), ")
	if keepState {
		b.WriteString("`state` (the variables restored, kept and dropped), ")
	}
	b.WriteString("and `timedOut` / `truncated` when true. ")
	b.WriteString("If the code fails, read stderr, fix the code and run it again.")
	return b.String()
}

func clipString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
