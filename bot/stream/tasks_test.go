package stream

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/agent/datasource"
	"github.com/sandpiper-bot/sandpiper/bot/slacktest"
	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// TestTaskChunks: the task updates of runs and queries, as Slack gets
// them: shapes and limits Slack takes (the fake checks them), program
// text through the streamed Markdown's guard.
func TestTaskChunks(t *testing.T) {
	run := agent.ToolCallEvent{Step: 1, Index: 0, Call: agent.ToolCall{ID: "call_1", Name: agent.ExecuteCodeName}}
	query := agent.ToolCallEvent{Step: 2, Index: 1, Call: agent.ToolCall{ID: "call_2", Name: datasource.QueryToolName}}
	open, _ := taskOpen(run)
	var chunks []slack.TaskUpdateChunk
	add := func(c slack.TaskUpdateChunk, ok bool) {
		t.Helper()
		if !ok {
			t.Fatal("no task")
		}
		chunks = append(chunks, c)
	}
	add(open, true)
	add(taskDone(agent.ToolResultEvent{ToolCallEvent: run, Duration: 1234 * time.Millisecond,
		Sandbox: &sandbox.Result{Stdout: []byte("\n<!channel> total \x1b[31m42\u202e " + strings.Repeat("x", 300) + "\nmore")}}))
	add(taskDone(agent.ToolResultEvent{ToolCallEvent: run, Duration: time.Second,
		Sandbox: &sandbox.Result{ExitCode: 1, Stderr: []byte("Traceback (most recent call last):\nZeroDivisionError: division by zero\n")}}))
	add(taskOpen(query))
	add(taskDone(agent.ToolResultEvent{ToolCallEvent: query, Query: &agent.Query{Source: "sales", Outcome: "ok", Rows: 12345, Duration: 35 * time.Millisecond}}))
	add(taskDone(agent.ToolResultEvent{ToolCallEvent: query, Query: &agent.Query{Source: "sales", Outcome: "failed", Err: `relation "nope" does not exist`}}))
	for i, c := range chunks {
		if err := slacktest.CheckChunks(c); err != nil {
			t.Errorf("chunk %d: Slack would refuse it: %v", i, err)
		}
	}
	if got := chunks[1].Output; strings.Contains(got, "<!channel>") || strings.ContainsAny(got, "\x1b\u202e") {
		t.Errorf("output %q: want the ping broken and the controls shown as symbols", got)
	}
	if chunks[2].Status != slack.TaskCardStatusError || !strings.Contains(chunks[2].Output, "ZeroDivisionError") {
		t.Errorf("failed run's task = %+v", chunks[2])
	}
	if _, ok := taskOpen(agent.ToolCallEvent{Call: agent.ToolCall{Name: datasource.DescribeToolName}}); ok {
		t.Errorf("describing a source shows a task; want only runs and queries")
	}
	slacktest.GoldenJSON(t, filepath.Join("testdata", "tasks.json"), chunks)

	// A chunk Slack would refuse fails the fake.
	bad := open
	bad.Status = "running"
	if err := slacktest.CheckChunks(bad); err == nil {
		t.Errorf("a task of status %q passed the fake", bad.Status)
	}
	bad = open
	bad.Output = strings.Repeat("x", 257)
	if err := slacktest.CheckChunks(bad); err == nil {
		t.Errorf("a task output of 257 characters passed the fake")
	}
}

func TestTasksRefusedBy(t *testing.T) {
	for code, want := range map[string]bool{"invalid_chunks": true, "invalid_arguments": true, "ratelimited": false, "channel_not_found": false} {
		if got := tasksRefused(slack.SlackErrorResponse{Err: code}); got != want {
			t.Errorf("tasksRefused(%s) = %v", code, got)
		}
	}
	if tasksRefused(errors.New("network")) {
		t.Error("a network error refuses tasks")
	}
}
