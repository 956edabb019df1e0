package answer

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sandpiper-bot/sandpiper/bot/internal/metric"
	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// Metrics are the answer path's counters and latencies; make them with
// [NewMetrics].
type Metrics struct {
	questions     prometheus.Counter
	toolRuns      *prometheus.CounterVec // by result
	sandboxRuns   *prometheus.CounterVec // by start: warm or cold
	files         *prometheus.CounterVec // by event
	errors        *prometheus.CounterVec // by kind
	caps          *prometheus.CounterVec // caps and limits that fired, by sandbox.Cap
	answerSeconds prometheus.Histogram
	runSeconds    prometheus.Histogram
	unverified    prometheus.Counter // numbers the number check listed
}

// The label values each labelled counter starts at 0 with, so that a
// dashboard or an alert sees them before they first happen.
var (
	runResults = []string{"ok", "failed", "timeout", "oom", "sandbox_error"}
	runStarts  = []string{"warm", "cold"}
	fileEvents = []string{"downloaded", "refused", "posted", "not_posted"}
	// errorKinds are the kinds of failure an answer counts.
	errorKinds = []string{"shutdown", "timeout", "step_limit", "empty", "model", "slack", "stopped", "lost"}
	capNames   = []sandbox.Cap{
		sandbox.CapOutput, sandbox.CapResultList, sandbox.CapMemory, sandbox.CapCPUQuota, sandbox.CapSocketFamily,
		sandbox.CapPreview, sandbox.CapToolResult,
		sandbox.Cap(sandbox.LimitTimeout), sandbox.Cap(sandbox.LimitCPU), sandbox.Cap(sandbox.LimitProcesses), sandbox.Cap(sandbox.LimitDisk),
	}
)

// NewMetrics registers the answer path's metrics in reg. Failures are
// counted in errors (sandpiper_errors_total, by kind), which the bot
// shares with its own: the kinds an answer counts start at 0 there.
func NewMetrics(reg prometheus.Registerer, errors *prometheus.CounterVec) *Metrics {
	f := metric.With(reg)
	caps := make([]string, len(capNames))
	for i, c := range capNames {
		caps[i] = string(c)
	}
	for _, k := range errorKinds {
		errors.WithLabelValues(k) // from 0
	}
	return &Metrics{
		errors:        errors,
		questions:     f.Counter("sandpiper_questions_total", "Questions taken up, follow-ups included."),
		toolRuns:      f.Counters("sandpiper_tool_runs_total", "executeCode runs by result.", "result", runResults...),
		sandboxRuns:   f.Counters("sandpiper_sandbox_runs_total", "Sandbox runs by how their interpreter started: warm (the preloaded modules already imported) or cold.", "start", runStarts...),
		files:         f.Counters("sandpiper_files_total", "Files downloaded from Slack, refused, posted to Slack, or not posted.", "event", fileEvents...),
		caps:          f.Counters("sandpiper_caps_total", "Caps and limits that fired, by name: once per run each (output, result_list, memory, cpu_quota, socket_family, tool_result, timeout, cpu, processes, disk), and preview once per question put together.", "cap", caps...),
		answerSeconds: f.Histogram("sandpiper_answer_seconds", "Time from taking a question to posting its answer.", 1, 2, 5, 10, 20, 30, 60, 120, 300),
		runSeconds:    f.Histogram("sandpiper_tool_run_seconds", "Duration of executeCode runs.", 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60),
		unverified:    f.Counter("sandpiper_numbers_unverified_total", "Numbers of answers found in no source of the conversation (runs' code and output, files, the question, earlier turns), listed under the answer by the number check."),
	}
}
