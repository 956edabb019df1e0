package agent

// Tests and benchmarks against the real local sandbox. They skip when this
// host cannot run it.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/sandbox"
	"github.com/sandpiper-bot/sandpiper/sandbox/local"
)

// testPython is the real interpreter, not a pyenv shim.
func testPython() string {
	if p := os.Getenv("SANDPIPER_TEST_PYTHON"); p != "" {
		return p
	}
	return "/usr/bin/python3"
}

var (
	localOnce sync.Once
	localSB   *local.Sandbox
	localErr  error
)

// localSandbox returns a shared local sandbox, or skips.
func localSandbox(tb testing.TB) *local.Sandbox {
	tb.Helper()
	localOnce.Do(func() {
		localSB, localErr = local.New(context.Background(), local.Config{Python: testPython(), Logger: slog.New(slog.DiscardHandler)})
	})
	if localErr != nil {
		tb.Skipf("the local sandbox does not work here: %v", localErr)
	}
	return localSB
}

var _ Runner = (*local.Sandbox)(nil)

// TestProbeRuntimeLocal checks the probe against the interpreter itself.
func TestProbeRuntimeLocal(t *testing.T) {
	sb := localSandbox(t)
	t0 := time.Now()
	rt, err := ProbeRuntime(t.Context(), sb)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("probe took %v", time.Since(t0))
	out, err := exec.Command(testPython(), "-c", "import platform; print(platform.python_version())").Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimSpace(string(out)); rt.Python != want {
		t.Errorf("Python = %q, want %q", rt.Python, want)
	}
	for _, m := range ProbedModules {
		importable := exec.Command(testPython(), "-c", "import "+m[0]).Run() == nil
		if rt.Has(m[0]) != importable {
			t.Errorf("module %s: probe says %v, python3 says %v", m[0], rt.Has(m[0]), importable)
		}
	}
	t.Logf("runtime: %s", rt)
	desc := NewExecuteCode(sb, ExecuteCodeOptions{Runtime: rt}).Spec().Description
	if !strings.Contains(desc, "Python "+rt.Python+".") {
		t.Errorf("description does not name the version:\n%s", desc)
	}
}

// TestExecuteCodeLocal runs real programs and checks what the model reads.
func TestExecuteCodeLocal(t *testing.T) {
	sb := localSandbox(t)
	tests := []struct {
		name   string
		code   string
		limits sandbox.Limits
		want   codeResult
		check  func(t *testing.T, r codeResult)
	}{
		{
			name: "prints",
			code: "print(5 + 5 - 84**3)",
			want: codeResult{Output: "-592694\n"},
		},
		{
			name: "traceback",
			code: "import sys\nprint('partial')\n1/0",
			check: func(t *testing.T, r codeResult) {
				if r.ExitCode != 1 || r.Output != "partial\n" || !strings.HasSuffix(r.Stderr, "ZeroDivisionError: division by zero\n") {
					t.Errorf("result = %+v", r)
				}
			},
		},
		{
			name: "bare expression prints nothing",
			code: "5 + 5",
			want: codeResult{Output: noOutput},
		},
		{
			name:   "timeout",
			code:   "import time\nprint('start', flush=True)\ntime.sleep(60)",
			limits: sandbox.Limits{Timeout: time.Second},
			check: func(t *testing.T, r codeResult) {
				if !r.TimedOut || r.Output != "start\n" || !strings.Contains(r.Stderr, "[sandbox: timed out after 1s]") {
					t.Errorf("result = %+v", r)
				}
			},
		},
		{
			name:   "too much output",
			code:   "print('x' * 100_000)",
			limits: sandbox.Limits{Output: 10_000},
			check: func(t *testing.T, r codeResult) {
				if !r.Truncated || !strings.Contains(r.Output, "[output cut: the program printed 97.7 KiB, more than the 9.8 KiB kept]") {
					t.Errorf("result = %.300q, truncated %v", r.Output, r.Truncated)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tool := NewExecuteCode(sb, ExecuteCodeOptions{Limits: tt.limits})
			in, _ := json.Marshal(map[string]string{"code": tt.code})
			out, err := tool.Call(t.Context(), nil, in)
			if err != nil {
				t.Fatal(err)
			}
			var r codeResult
			if err := json.Unmarshal([]byte(out.Content), &r); err != nil {
				t.Fatal(err)
			}
			if out.Sandbox == nil {
				t.Error("no sandbox result")
			}
			if tt.check != nil {
				tt.check(t, r)
			} else if r.Output != tt.want.Output || r.Stderr != tt.want.Stderr || r.ExitCode != tt.want.ExitCode {
				t.Errorf("result = %+v, want %+v", r, tt.want)
			}
		})
	}
}

// TestRunCancelLocal cancels a run while its program spins in the real
// sandbox: Run returns at once, and the program is gone.
func TestRunCancelLocal(t *testing.T) {
	sb := localSandbox(t)
	const marker = "spin_until_cancelled = True"
	model := &scriptedModel{turns: []turn{{calls: []ToolCall{codeCall("c1", marker+"\nwhile spin_until_cancelled: pass")}}}}
	a := &Agent{Model: model, Tools: []Tool{NewExecuteCode(sb, ExecuteCodeOptions{})}, Logger: testLogger(t)}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var started atomic.Bool
	obs := ObserverFuncs{OnToolCallStarted: func(ToolCallEvent) {
		go func() {
			// Cancel once the program is running, and has spun a while.
			if eventually(10*time.Second, func() bool { return len(procsWith(marker)) > 0 }) {
				started.Store(true)
				time.Sleep(100 * time.Millisecond)
			}
			cancel()
		}()
	}}
	cancelledAt := make(chan time.Time, 1)
	context.AfterFunc(ctx, func() { cancelledAt <- time.Now() })
	out, err := a.Run(ctx, []Message{UserMessage("spin")}, RunOptions{Observer: obs})
	returned := time.Now()
	if !errors.Is(err, context.Canceled) || out.Stop != StopCanceled {
		t.Fatalf("Run = %+v, %v; want cancelled", out, err)
	}
	if !started.Load() {
		t.Fatal("the program was never seen running, so cancelling it proved nothing")
	}
	if d := returned.Sub(<-cancelledAt); d > time.Second {
		t.Errorf("Run returned %v after the cancel", d)
	}
	if !eventually(2*time.Second, func() bool { return len(procsWith(marker)) == 0 }) {
		t.Fatalf("the program is still running: %q", procsWith(marker))
	}
}

// eventually polls cond until it holds or timeout passes, and reports
// whether it held.
func eventually(timeout time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// procsWith lists the command lines of processes that contain marker.
func procsWith(marker string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Contains(cmd, []byte(marker)) {
			found = append(found, strings.ReplaceAll(string(cmd), "\x00", " "))
		}
	}
	return found
}

// instantModel answers every request at once: a tool call when the last
// message is the question, an answer when it is a tool result.
type instantModel struct{ call ToolCall }

func (m instantModel) ID() string { return "bench/instant" }

func (m instantModel) Generate(_ context.Context, req *Request, text func(string)) (*Response, error) {
	if req.Messages[len(req.Messages)-1].Role == RoleTool {
		text("-592694")
		return &Response{Message: Message{Role: RoleAssistant, Text: "-592694"}, Finish: FinishStop}, nil
	}
	return &Response{Message: Message{Role: RoleAssistant, ToolCalls: []ToolCall{m.call}}, Finish: FinishToolCalls}, nil
}

const benchCode = "print(5 + 5 - 84**3)"

// BenchmarkLoopStep is one full loop step (a model turn calling
// executeCode, the run in the real sandbox, and the answering turn) with
// an instant model. Compare with BenchmarkSandbox: the difference is the
// loop's overhead.
func BenchmarkLoopStep(b *testing.B) {
	sb := localSandbox(b)
	a := &Agent{Model: instantModel{codeCall("c1", benchCode)}, Tools: []Tool{NewExecuteCode(sb, ExecuteCodeOptions{})}}
	history := []Message{UserMessage("What is 5 + 5 minus 84 cubed?")}
	for b.Loop() {
		out, err := a.Run(b.Context(), history, RunOptions{})
		if err != nil || out.Answer != "-592694" {
			b.Fatalf("Run = %+v, %v", out, err)
		}
	}
}

// BenchmarkSandbox is the sandbox alone running the same program.
func BenchmarkSandbox(b *testing.B) {
	sb := localSandbox(b)
	for b.Loop() {
		res, err := sb.Run(b.Context(), sandbox.Request{Code: benchCode})
		if err != nil || string(res.Stdout) != "-592694\n" {
			b.Fatalf("Run = %+v, %v", res, err)
		}
	}
}

// BenchmarkLoopOverhead is the loop step with an instant sandbox: the
// loop's own cost per step, measured directly.
func BenchmarkLoopOverhead(b *testing.B) {
	runner := &fakeRunner{fn: func(context.Context, sandbox.Request) (*sandbox.Result, error) {
		return &sandbox.Result{Stdout: []byte("-592694\n"), StdoutSize: 8}, nil
	}}
	a := &Agent{Model: instantModel{codeCall("c1", benchCode)}, Tools: []Tool{NewExecuteCode(runner, ExecuteCodeOptions{})}}
	history := []Message{UserMessage("What is 5 + 5 minus 84 cubed?")}
	for b.Loop() {
		runner.reqs = runner.reqs[:0]
		if _, err := a.Run(b.Context(), history, RunOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestExecuteCodeWorkspaceLocal: in the real sandbox, a file written by one
// run is read by the next, and inputs larger than the promised disk space
// still fit.
func TestExecuteCodeWorkspaceLocal(t *testing.T) {
	sb := localSandbox(t)
	tool := NewExecuteCode(sb, ExecuteCodeOptions{Limits: sandbox.Limits{DiskSize: 1 << 20}})
	big := bytes.Repeat([]byte("0123456789\n"), 200_000) // 2.1 MiB, over the 1 MiB disk limit
	ws := NewMemWorkspace([]sandbox.File{{Name: "big.txt", Data: big}}, 0)
	call := func(code string) codeResult {
		t.Helper()
		in, _ := json.Marshal(map[string]string{"code": code})
		out, err := tool.Call(t.Context(), ws, in)
		if err != nil {
			t.Fatal(err)
		}
		var r codeResult
		json.Unmarshal([]byte(out.Content), &r)
		return r
	}
	r := call("import os\nprint(os.getcwd(), os.path.getsize('big.txt'))\nopen('step1.txt', 'w').write('from run one')")
	if r.ExitCode != 0 || r.Output != "/mnt/data 2200000\n" || len(r.Files) != 1 || r.Files[0] != "step1.txt" {
		t.Fatalf("first run = %+v", r)
	}
	r = call("print(open('/mnt/data/step1.txt').read())")
	if r.ExitCode != 0 || r.Output != "from run one\n" {
		t.Errorf("second run = %+v", r)
	}
}
