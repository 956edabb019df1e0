package bot_test

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/bot/slacktest"
)

// The chart tests: a chart a run draws with the chart helper shows as
// Slack's own chart when it fits, and as its PNG when it does not, when
// Slack refuses it, and in the terminal; through the fake Slack (which
// refuses charts past Slack's limits), the real agent loop and the real
// sandbox.

// chartScript writes the programs of the chart tests. Each prints the
// time it ends first: the task's one-line result.
func chartScript(q string) (string, bool) {
	const end = "import time\nprint(repr(time.time()))\n"
	switch {
	case strings.Contains(q, "old way"):
		// What the model wrote before the chart helper: a PNG.
		return `import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
weeks = [f"W{i}" for i in range(1, 13)]
plt.plot(weeks, [100 + 7 * i for i in range(12)])
plt.title("Weekly sign-ups")
plt.savefig("weekly-sign-ups.png", dpi=150, bbox_inches="tight", metadata={"Title": "Weekly sign-ups"})
` + end, true
	case strings.Contains(q, "weekly sign-ups"):
		return `import chart
chart.line([f"W{i}" for i in range(1, 13)], {"sign-ups": [100 + 7 * i for i in range(12)]}, title="Weekly sign-ups", y_label="people")
` + end, true
	case strings.Contains(q, "daily sign-ups"):
		// 90 points: more than Slack's chart holds.
		return `import chart
chart.line([f"D{i}" for i in range(1, 91)], {"sign-ups": list(range(90))}, title="Daily sign-ups")
` + end, true
	}
	return defaultScript(q)
}

func needPlot(t *testing.T) {
	if exec.Command("/usr/bin/python3", "-c", "import matplotlib").Run() != nil {
		t.Skip("matplotlib is not installed for /usr/bin/python3")
	}
}

// chartAnswer asks q in a channel and returns the thread, the Web API
// calls the answer made and the bytes it uploaded.
func chartAnswer(t *testing.T, h *harness, q string) (msgs []slacktest.Message, calls int, uploaded int) {
	t.Helper()
	before := len(h.slack.Calls(""))
	d := h.post("C0MATH", "U0ALICE", mention+q, "")
	msgs = h.waitReplies("C0MATH", d.TS, 1)
	h.idle()
	for _, m := range h.slack.Thread("C0MATH", d.TS) {
		for _, f := range m.Files {
			uploaded += len(f.Data)
		}
	}
	return h.slack.Thread("C0MATH", d.TS), len(h.slack.Calls("")) - before, uploaded
}

// chartMessages returns the thread's messages holding native charts.
func chartMessages(msgs []slacktest.Message) []slacktest.Message {
	var out []slacktest.Message
	for _, m := range msgs {
		if len(m.ChartBlocks()) > 0 {
			out = append(out, m)
		}
	}
	return out
}

// TestChartIsNative: a chart that fits Slack's limits shows as Slack's
// own line chart, its PNG is not uploaded, the card says so, and the
// run's task shows done soon after the run ends. It measures the calls
// and bytes of a chart answer against the same chart drawn as a PNG.
func TestChartIsNative(t *testing.T) {
	needPlot(t)
	h := newHarness(t, withScript(chartScript))
	oldMsgs, oldCalls, oldBytes := chartAnswer(t, h, "plot weekly sign-ups the old way")
	if len(chartMessages(oldMsgs)) != 0 || oldBytes == 0 {
		t.Fatalf("the old way: want a PNG upload and no native chart:\n%s", dump(oldMsgs))
	}
	msgs, calls, bytes := chartAnswer(t, h, "plot weekly sign-ups")
	charts := chartMessages(msgs)
	if len(charts) != 1 {
		t.Fatalf("want one message with a native chart:\n%s", dump(msgs))
	}
	b := charts[0].ChartBlocks()[0]
	chart, _ := b["chart"].(map[string]any)
	series, _ := chart["series"].([]any)
	if b["title"] != "Weekly sign-ups" || chart["type"] != "line" || len(series) != 1 {
		t.Errorf("chart block = %v", b)
	}
	if got := charts[0].Visible(); !strings.Contains(got, "[line chart] Weekly sign-ups") {
		t.Errorf("chart message reads %q", got)
	}
	if bytes != 0 {
		t.Errorf("%d bytes uploaded for a chart Slack draws itself; want none", bytes)
	}
	if card := botMessages(msgs, isCard); len(card) != 1 || !strings.Contains(card[0].Visible(), "weekly-sign-ups.png") || !strings.Contains(card[0].Visible(), "shown as a chart below") {
		t.Errorf("card does not say the PNG is shown as a chart:\n%s", dump(msgs))
	}
	t.Logf("Web API calls per chart answer: %d as a PNG, %d as a native chart; bytes uploaded: %d, then %d", oldCalls, calls, oldBytes, bytes)
	if calls >= oldCalls {
		t.Errorf("a native chart took %d calls, the PNG %d: want fewer", calls, oldCalls)
	}

	// The run's task: done, its result the first line the program
	// printed (the time it ended), soon after the program ended.
	var task *slacktest.Task
	for _, m := range msgs {
		if len(m.Tasks) == 1 {
			task = &m.Tasks[0]
		}
	}
	if task == nil || task.Status != "complete" || task.Title != "Ran Python" {
		t.Fatalf("want the run's task complete:\n%s", dump(msgs))
	}
	end, err := strconv.ParseFloat(task.Output, 64)
	if err != nil {
		t.Fatalf("task output %q: %v", task.Output, err)
	}
	lag := task.Updated.Sub(time.Unix(0, int64(end*1e9)))
	t.Logf("the task showed done %v after the program ended", lag.Round(time.Millisecond))
	if lag < 0 || lag > 5*time.Second {
		t.Errorf("the task showed done %v after the program ended", lag)
	}
}

// TestChartPastLimitsIsPNG: a chart Slack's chart cannot carry (90
// points) is posted as its PNG, and the card in debug says why.
func TestChartPastLimitsIsPNG(t *testing.T) {
	needPlot(t)
	h := newHarness(t, withScript(chartScript))
	d := h.post("C0MATH", "U0ADMIN", mention+"debug on", "")
	h.waitReplies("C0MATH", d.TS, 1)
	msgs, _, bytes := chartAnswer(t, h, "plot daily sign-ups")
	if len(chartMessages(msgs)) != 0 || bytes == 0 {
		t.Fatalf("want the PNG and no native chart:\n%s", dump(msgs))
	}
	if card := botMessages(msgs, isCard)[0].Visible(); !strings.Contains(card, "90 points a series; Slack's charts hold 20") {
		t.Errorf("the debug card does not say why the chart is an image:\n%s", card)
	}
}

// TestChartRefusedIsPNG: when Slack refuses the chart (invalid_blocks),
// its PNG is posted instead and the answer arrives whole.
func TestChartRefusedIsPNG(t *testing.T) {
	needPlot(t)
	h := newHarness(t, withScript(chartScript))
	h.slack.FailNext("chat.postMessage", slacktest.Failure{Error: "invalid_blocks", Match: "data_visualization"})
	msgs, _, bytes := chartAnswer(t, h, "plot weekly sign-ups")
	if len(chartMessages(msgs)) != 0 || bytes == 0 {
		t.Fatalf("want the PNG after Slack refused the chart:\n%s", dump(msgs))
	}
	if len(botMessages(msgs, isAnswer)) != 1 {
		t.Errorf("want the answer:\n%s", dump(msgs))
	}
	if card := botMessages(msgs, isCard)[0].Visible(); !strings.Contains(card, "weekly-sign-ups.png") || strings.Contains(card, "shown as a chart") {
		t.Errorf("the card does not show the PNG as posted:\n%s", card)
	}
}

// TestTasksRefused: when Slack refuses task updates (invalid_chunks),
// the answer streams all the same, without tasks, once.
func TestTasksRefused(t *testing.T) {
	h := newHarness(t, withScript(chartScript))
	h.slack.FailNext("chat.startStream", slacktest.Failure{Error: "invalid_chunks", Match: "task_update"})
	d := h.post("C0MATH", "U0ALICE", mention+"compute 6*7", "")
	msgs := h.waitReplies("C0MATH", d.TS, 1)
	h.idle()
	msgs = h.slack.Thread("C0MATH", d.TS)
	answers := botMessages(msgs, isAnswer)
	if len(answers) != 1 || !strings.Contains(answers[0].Visible(), "42") || len(botMessages(msgs, isCard)) != 1 {
		t.Fatalf("want one card and one answer:\n%s", dump(msgs))
	}
	for _, m := range msgs {
		if len(m.Tasks) > 0 {
			t.Errorf("a task after Slack refused them: %+v", m.Tasks)
		}
	}
	// Later answers stream without tasks: no refused call again.
	d = h.post("C0MATH", "U0ALICE", mention+"compute 2+2", "")
	h.waitReplies("C0MATH", d.TS, 1)
	n := 0
	for _, c := range h.slack.Calls("") {
		if strings.Contains(c.Form.Get("chunks"), "task_update") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d calls with tasks; want the one Slack refused", n)
	}
}
