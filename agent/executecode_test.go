package agent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

func TestExecuteCodeDescription(t *testing.T) {
	rt := Runtime{Python: "3.13.1", Modules: []Module{{"numpy", "2.1.0"}, {"sympy", ""}}}
	desc := NewExecuteCode(&fakeRunner{}, ExecuteCodeOptions{Runtime: rt, Limits: sandbox.Limits{Timeout: 10 * time.Second}}).Spec().Description
	for _, want := range []string{
		"`python3 -c <code>`, in a fresh sandbox",
		"only what the program prints comes back",
		"write `print(5 + 5)`",
		"Python 3.13.1. Third-party modules available: numpy 2.1.0, sympy;",
		"no network access",
		"Limits per run: 10s of wall time, 512.0 MiB of memory, 1.0 MiB of output per stream",
		"The working directory is /mnt/data (64.0 MiB writable).",
		"`output` (stdout), `stderr`, `exitCode`, `files` (the files written), and `timedOut` / `truncated` when true",
		"Files the program writes in /mnt/data are delivered to the user",
		"names starting with '.' are not delivered",
		"A CSV written in /mnt/data is also shown in the conversation as a table",
		"to show a pandas DataFrame, save it as CSV there (`df.to_csv('name.csv', index=False)`)",
	} {
		if !strings.Contains(desc, want) {
			t.Errorf("description lacks %q:\n%s", want, desc)
		}
	}
	bare := NewExecuteCode(&fakeRunner{}, ExecuteCodeOptions{Runtime: Runtime{Python: "3.13.1"}}).Spec().Description
	if !strings.Contains(bare, "Only the standard library is available") || strings.Contains(bare, "matplotlib") {
		t.Errorf("description without modules:\n%s", bare)
	}
	// A failed probe (no runtime) must not claim there is no numpy.
	unknown := NewExecuteCode(&fakeRunner{}, ExecuteCodeOptions{}).Spec().Description
	if strings.Contains(unknown, "Only the standard library") || !strings.Contains(unknown, "Which third-party modules are installed is unknown") {
		t.Errorf("description after a failed probe:\n%s", unknown)
	}
	plots := NewExecuteCode(&fakeRunner{}, ExecuteCodeOptions{Runtime: Runtime{Modules: []Module{{"matplotlib", "3.10.0"}}}}).Spec().Description
	if !strings.Contains(plots, "plt.savefig('name.png'") || !strings.Contains(plots, "Never call plt.show()") {
		t.Errorf("description with matplotlib does not say how to save a chart:\n%s", plots)
	}
	// The chart helper is there in every sandbox, and its limits for a
	// native chart are told.
	for _, d := range []string{bare, plots} {
		if !strings.Contains(d, "import chart; chart.line(") || !strings.Contains(d, "at most 20 categories, 6 series") {
			t.Errorf("description does not say how to draw a native chart:\n%s", d)
		}
	}
}

// TestExecuteCodeResult checks the JSON the model reads for each kind of
// run.
// TestExecuteCodeAsksRunner: the tool's limits are the runner's, as its
// Info reports them, under the options' own; the model is told them; the
// requests carry only the options' own; and a runner that keeps no state
// gets no stateful runs, whatever the options say.
func TestExecuteCodeAsksRunner(t *testing.T) {
	lim := sandbox.Limits{Timeout: 7 * time.Second, Memory: 100 << 20, StateSize: 1 << 20}.WithDefaults()
	r := &fakeRunner{
		info: &sandbox.Info{Backend: sandbox.BackendKubernetes, Limits: lim},
		fn: func(context.Context, sandbox.Request) (*sandbox.Result, error) {
			return &sandbox.Result{Stdout: []byte("ok\n")}, nil
		},
	}
	tool := NewExecuteCode(r, ExecuteCodeOptions{KeepState: true})
	if got := tool.Limits(); got != lim {
		t.Errorf("Limits() = %+v, want the runner's %+v", got, lim)
	}
	desc := tool.Spec().Description
	if want := "Limits per run: 7s of wall time, 100.0 MiB of memory"; !strings.Contains(desc, want) {
		t.Errorf("description lacks %q:\n%s", want, desc)
	}
	if strings.Contains(desc, "are kept for the later calls") {
		t.Errorf("the description promises state the runner does not keep:\n%s", desc)
	}
	ws := NewMemWorkspace(nil, 1<<20)
	if _, err := tool.Call(t.Context(), ws, json.RawMessage(`{"code": "print(1)"}`)); err != nil {
		t.Fatal(err)
	}
	if req := r.reqs[0]; req.KeepState || req.Limits != (sandbox.Limits{}) {
		t.Errorf("request keeps state %v, limits %+v; want no state, and the runner's limits (none of its own)", req.KeepState, req.Limits)
	}

	over := NewExecuteCode(r, ExecuteCodeOptions{Limits: sandbox.Limits{Timeout: time.Second}})
	if got := over.Limits(); got.Timeout != time.Second || got.Memory != lim.Memory {
		t.Errorf("Limits() with a timeout of its own = %+v, want 1s and the runner's memory", got)
	}
}

func TestExecuteCodeResult(t *testing.T) {
	long := strings.Repeat("é", 20_000) // 40,000 bytes
	tests := []struct {
		name string
		res  sandbox.Result
		opts ExecuteCodeOptions
		want string
	}{
		{
			name: "output",
			res:  sandbox.Result{Stdout: []byte("42\n")},
			want: `{"output":"42\n","stderr":"","exitCode":0}`,
		},
		{
			name: "success without output",
			res:  sandbox.Result{Stderr: []byte("DeprecationWarning: x\n")},
			want: `{"output":"` + noOutput + `","stderr":"DeprecationWarning: x\n","exitCode":0}`,
		},
		{
			name: "timeout",
			res:  sandbox.Result{Stdout: []byte("1\n"), ExitCode: 137, Limit: sandbox.LimitTimeout},
			want: `{"output":"1\n","stderr":"[sandbox: timed out after 30s]","exitCode":137,"timedOut":true}`,
		},
		{
			name: "out of memory",
			res:  sandbox.Result{ExitCode: 137, Limit: sandbox.LimitMemory, Stderr: []byte("Killed")},
			want: `{"output":"","stderr":"Killed\n[sandbox: killed at the memory limit of 512.0 MiB]","exitCode":137}`,
		},
		{
			name: "CPU time",
			res:  sandbox.Result{ExitCode: 152, Limit: sandbox.LimitCPU},
			want: `{"output":"","stderr":"[sandbox: killed at the CPU-time limit of 1m0s]","exitCode":152}`,
		},
		{
			name: "processes",
			res:  sandbox.Result{Stdout: []byte("done\n"), ExitCode: 1, Limit: sandbox.LimitProcesses},
			want: `{"output":"done\n","stderr":"[sandbox: reached the limit of 64 processes and threads]","exitCode":1}`,
		},
		{
			name: "sandbox gone",
			res:  sandbox.Result{Stdout: []byte("1\n"), ExitCode: 137, Gone: "the Kubernetes sandbox sb-1 was deleted"},
			want: `{"output":"1\n","stderr":"[sandbox: the Kubernetes sandbox sb-1 was deleted during the run, which ended the program; this is not a problem with the code, and running it again gets a new sandbox]","exitCode":137}`,
		},
		{
			name: "cut by the sandbox",
			res:  sandbox.Result{Stdout: []byte("xxxx"), StdoutTruncated: true, StdoutSize: 3 << 20},
			opts: ExecuteCodeOptions{Limits: sandbox.Limits{Output: 4}},
			want: `{"output":"xxxx\n[output cut: the program printed 3.0 MiB, more than the 4 bytes kept]","stderr":"","exitCode":0,"truncated":true}`,
		},
		{
			name: "files",
			res:  sandbox.Result{Stdout: []byte("saved\n"), Files: []sandbox.File{{Name: "plot.png", Data: []byte("PNG")}}},
			want: `{"output":"saved\n","stderr":"","exitCode":0,"files":["plot.png"]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := NewMemWorkspace(nil, 0)
			r := &fakeRunner{fn: func(context.Context, sandbox.Request) (*sandbox.Result, error) { res := tt.res; return &res, nil }}
			out, err := NewExecuteCode(r, tt.opts).Call(t.Context(), ws, json.RawMessage(`{"code":"x"}`))
			if err != nil {
				t.Fatal(err)
			}
			if out.Content != tt.want {
				t.Errorf("content:\n%s\nwant:\n%s", out.Content, tt.want)
			}
			if kept, _ := ws.Files(t.Context()); len(kept) != len(tt.res.Files) {
				t.Errorf("the workspace kept %v", kept)
			}
		})
	}

	t.Run("long output keeps head and tail", func(t *testing.T) {
		r := &fakeRunner{fn: func(context.Context, sandbox.Request) (*sandbox.Result, error) {
			return &sandbox.Result{Stdout: []byte("start" + long + "end")}, nil
		}}
		out, err := NewExecuteCode(r, ExecuteCodeOptions{}).Call(t.Context(), nil, json.RawMessage(`{"code":"x"}`))
		if err != nil {
			t.Fatal(err)
		}
		var res codeResult
		json.Unmarshal([]byte(out.Content), &res)
		if !res.Truncated || !strings.HasPrefix(res.Output, "start") || !strings.HasSuffix(res.Output, "end") ||
			!strings.Contains(res.Output, " KiB left out ...]\n") || len(res.Output) > MaxModelOutput+100 || !utf8.ValidString(res.Output) {
			t.Errorf("output (%d bytes) = %.200q…", len(res.Output), res.Output)
		}
	})
}

// TestExecuteCodeWorkspace: a second run of an answer reads what the first
// wrote, the disk limit grows by the inputs, and the tool result lists the
// files.
func TestExecuteCodeWorkspace(t *testing.T) {
	r := &fakeRunner{fn: func(_ context.Context, req sandbox.Request) (*sandbox.Result, error) {
		if strings.Contains(req.Code, "write") {
			return &sandbox.Result{Files: []sandbox.File{{Name: "out.csv", Data: []byte("x\n1\n")}}, FilesOmitted: []string{"link (not a regular file)"}}, nil
		}
		return &sandbox.Result{Stdout: []byte("ok\n")}, nil
	}}
	tool := NewExecuteCode(r, ExecuteCodeOptions{})
	ws := NewMemWorkspace([]sandbox.File{{Name: "in.csv", Data: make([]byte, 1000)}}, 0)
	out, err := tool.Call(t.Context(), ws, json.RawMessage(`{"code":"write"}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `"files":["out.csv"],"filesOmitted":["link (not a regular file)"]`; !strings.Contains(out.Content, want) {
		t.Errorf("result %s lacks %s", out.Content, want)
	}
	if _, err := tool.Call(t.Context(), ws, json.RawMessage(`{"code":"read"}`)); err != nil {
		t.Fatal(err)
	}
	if len(r.reqs) != 2 {
		t.Fatalf("%d runs", len(r.reqs))
	}
	if got := names(r.reqs[1].Files); got != "in.csv out.csv" {
		t.Errorf("second run's files = %s, want in.csv out.csv", got)
	}
	if got, want := r.reqs[0].Limits.DiskSize, int64(sandbox.DefaultDiskSize+1000); got != want {
		t.Errorf("disk limit = %d, want %d (the default plus the inputs)", got, want)
	}
	// Without a workspace nothing is placed and the limits are untouched.
	if _, err := tool.Call(t.Context(), nil, json.RawMessage(`{"code":"read"}`)); err != nil {
		t.Fatal(err)
	}
	if last := r.reqs[2]; len(last.Files) != 0 || last.Limits.DiskSize != 0 {
		t.Errorf("request without a workspace = %+v", last)
	}
}

func names(files []sandbox.File) string {
	var out []string
	for _, f := range files {
		out = append(out, f.Name)
	}
	return strings.Join(out, " ")
}

func TestDecodeCode(t *testing.T) {
	for _, tt := range []struct {
		in, code, err string
	}{
		{in: `{"code": "print(1)"}`, code: "print(1)"},
		{in: `"{\"code\": \"print(2)\"}"`, code: "print(2)"}, // arguments sent as a JSON string
		{in: `{"code": "print(1)", "language": "python"}`, code: "print(1)"},
		{in: `{"code": "print(1)`, err: "invalid input: the arguments are not valid JSON"},
		{in: `{"source": "print(1)"}`, err: `invalid input: the required field "code" is missing`},
		{in: `{"code": 42}`, err: "invalid input: json: cannot unmarshal number"},
		{in: `{"code": "  "}`, err: `invalid input: "code" is empty`},
		{in: `[]`, err: "invalid input: json: cannot unmarshal array"},
	} {
		code, err := decodeCode(json.RawMessage(tt.in))
		if tt.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
				t.Errorf("decodeCode(%s) = %q, %v; want error %q", tt.in, code, err, tt.err)
			}
			continue
		}
		if err != nil || code != tt.code {
			t.Errorf("decodeCode(%s) = %q, %v; want %q", tt.in, code, err, tt.code)
		}
	}
}

// FuzzDecodeCode: model-written arguments never panic, and what decodes
// is non-blank code.
func FuzzDecodeCode(f *testing.F) {
	for _, s := range []string{`{"code":"print(1)"}`, `"{\"code\":\"x\"}"`, `{"code":`, `null`, `{"code":null}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		code, err := decodeCode(json.RawMessage(in))
		if err == nil && strings.TrimSpace(code) == "" {
			t.Errorf("decodeCode(%q) accepted blank code", in)
		}
	})
}

// FuzzClip: clipped output stays within its bytes of JSON and valid UTF-8
// stays valid.
func FuzzClip(f *testing.F) {
	f.Add("hello, world", 5)
	f.Add(strings.Repeat("日本語", 100), 17)
	f.Add(strings.Repeat("\x1b<\xff", 100), 80)
	f.Fuzz(func(t *testing.T, s string, n int) {
		if n < 1 || n > 1<<16 {
			return
		}
		got, cut := clip([]byte(s), n)
		if !cut {
			if got != s {
				t.Errorf("uncut clip changed the text")
			}
			return
		}
		if enc, _ := json.Marshal(got); len(enc)-2 > max(n, clipNoteBytes) {
			t.Errorf("clip(%d bytes, %d) = %d bytes of JSON", len(s), n, len(enc)-2)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Errorf("clip broke UTF-8: %q", got)
		}
	})
}
