package stream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/agent/datasource"
	"github.com/sandpiper-bot/sandpiper/bot/internal/slackapi"
	"github.com/sandpiper-bot/sandpiper/bot/render"
	"github.com/sandpiper-bot/sandpiper/sandbox"
	"github.com/sandpiper-bot/sandpiper/sandbox/safetext"
)

// Tasks: each run (and each database query) shows as a task in the
// streamed answer, a task_update chunk updated in place ("Running
// Python", in progress, then complete or error with a one-line result).
// The task is a streamed message of its own, started right after the
// run's card and before the files the run wrote, updated when the run
// ends and stopped when the next step starts: the thread reads card,
// task, files, then the model's next words. (Text streamed into the
// task's message would stand above the run's files and charts.)

// taskChars bounds a task's title, details and output (Slack documents
// 256 characters for details and output).
const taskChars = 256

// taskResultChars bounds the one-line result a task shows.
const taskResultChars = 120

// taskOpen returns the in-progress task of a tool call, or false for a
// call that shows none.
func taskOpen(e agent.ToolCallEvent) (slack.TaskUpdateChunk, bool) {
	var title string
	switch e.Call.Name {
	case agent.ExecuteCodeName:
		title = "Running Python"
	case datasource.QueryToolName:
		title = "Querying data"
	default:
		return slack.TaskUpdateChunk{}, false
	}
	c := slack.NewTaskUpdateChunk(taskID(e), title)
	c.Status = slack.TaskCardStatusInProgress
	return c, true
}

// taskDone returns the finished task of a tool call: complete or error,
// with a one-line result.
func taskDone(e agent.ToolResultEvent) (slack.TaskUpdateChunk, bool) {
	c, ok := taskOpen(e.ToolCallEvent)
	if !ok {
		return c, false
	}
	c.Status = slack.TaskCardStatusComplete
	switch q := e.Query; {
	case q != nil:
		c.Title = "Queried " + taskText(q.Source)
		if q.Outcome == "ok" || q.Outcome == "truncated" {
			c.Output = fmt.Sprintf("%s rows in %s", render.Thousands(q.Rows), render.Duration(q.Duration))
		} else {
			c.Status, c.Output = slack.TaskCardStatusError, taskText(q.Outcome+": "+q.Err)
		}
	case e.Call.Name == agent.ExecuteCodeName:
		v := sandbox.VerdictOf(e.Sandbox, e.Err)
		if v.Failed() {
			c.Title, c.Status = "Python failed", slack.TaskCardStatusError
			c.Output = taskText(v.Phrase + lastLine(e.Sandbox))
			break
		}
		c.Title = "Ran Python"
		c.Output = "No output"
		if line := firstLine(string(e.Sandbox.Stdout)); line != "" {
			c.Output = taskText(line)
		}
		c.Details = render.Duration(e.Duration)
	default:
		if e.Err != nil {
			c.Status, c.Output = slack.TaskCardStatusError, taskText(e.Err.Error())
		}
	}
	return c, true
}

// taskID names a tool call's task within its message.
func taskID(e agent.ToolCallEvent) string {
	return fmt.Sprintf("step%d-call%d", e.Step, e.Index)
}

// taskText is text from a program or a database as a task shows it:
// through the guard the streamed Markdown has (no pings, no hidden
// links), neutralised, on one line, within taskResultChars.
func taskText(s string) string {
	g := render.NewGuard()
	s = g.Write(safetext.Line(s)) + g.Flush()
	return render.Truncate(strings.Join(strings.Fields(s), " "), taskResultChars)
}

func firstLine(s string) string {
	for l := range strings.SplitSeq(s, "\n") {
		if strings.TrimSpace(l) != "" {
			return l
		}
	}
	return ""
}

// lastLine is ": " and the last line the program wrote to stderr (the
// exception of a traceback), or "".
func lastLine(res *sandbox.Result) string {
	if res == nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(res.Stderr)), "\n")
	if l := strings.TrimSpace(lines[len(lines)-1]); l != "" {
		return ": " + l
	}
	return ""
}

// tasksOn reports whether the answer's runs show as tasks.
func (s *Answer) tasksOn() bool { return !s.fallback && !s.st.tasksOff.Load() }

// openTask opens the step's message with a tool call's task.
func (s *Answer) openTask(ctx context.Context, e agent.ToolCallEvent) {
	c, ok := taskOpen(e)
	if !ok || !s.tasksOn() {
		return
	}
	if s.msg == nil {
		s.msg = s.openMsg(ctx)
	}
	s.msg.addTask(c)
}

// finishTask shows a tool call's task done, in the message it opened.
func (s *Answer) finishTask(e agent.ToolResultEvent) {
	c, ok := taskDone(e)
	if !ok || s.msg == nil || !s.tasksOn() {
		return
	}
	s.msg.addTask(c)
}

// addTask queues a task update: it replaces one of the same id not yet
// sent.
func (g *message) addTask(c slack.TaskUpdateChunk) {
	c.Title, c.Details, c.Output = clipTask(c.Title), clipTask(c.Details), clipTask(c.Output)
	g.mu.Lock()
	g.tasks = mergeTasks(g.tasks, c)
	g.mu.Unlock()
	g.signal()
}

func clipTask(s string) string { return render.Truncate(s, taskChars) }

// mergeTasks adds c to tasks, replacing the update of its id.
func mergeTasks(tasks []slack.TaskUpdateChunk, cs ...slack.TaskUpdateChunk) []slack.TaskUpdateChunk {
	for _, c := range cs {
		if i := slices.IndexFunc(tasks, func(t slack.TaskUpdateChunk) bool { return t.ID == c.ID }); i >= 0 {
			tasks[i] = c
		} else {
			tasks = append(tasks, c)
		}
	}
	return tasks
}

// takeTasks returns the task updates not yet taken.
func (g *message) takeTasks() []slack.TaskUpdateChunk {
	g.mu.Lock()
	defer g.mu.Unlock()
	t := g.tasks
	g.tasks = nil
	return t
}

// putTasks shows task updates: it starts the message with them, or
// appends them, or holds them for the call that stops it (final, or
// appends limited). Where Slack refuses them (invalid_chunks …), tasks
// are off for the workspace and the message goes on without them.
func (g *message) putTasks(tasks []slack.TaskUpdateChunk, final bool) error {
	if len(tasks) == 0 || g.st.tasksOff.Load() {
		return nil
	}
	chunks := make([]slack.StreamChunk, len(tasks))
	for i, t := range tasks {
		chunks[i] = t
	}
	var err error
	switch {
	case g.ts == "":
		opts := append(g.startOpts(), slack.MsgOptionChunks(chunks...), slack.MsgOptionTaskDisplayMode(slack.TaskDisplayModeTimeline))
		var ts string
		err = g.st.call(g.ctx, g.st.budgets.start, func() (err error) {
			_, ts, err = g.st.api.StartStreamContext(g.ctx, g.channel, opts...)
			return err
		})
		if err == nil {
			g.ts = ts
			g.parts = append(g.parts, ts)
			g.noteTasks(tasks)
			return nil
		}
	case final || g.limited || g.held != "" || len(g.heldTasks) > 0:
		g.heldTasks = mergeTasks(g.heldTasks, tasks...)
		return nil
	default:
		if err = g.st.budgets.append.wait(g.ctx, g.appends, g.ending); errors.Is(err, errGaveUp) {
			g.heldTasks = mergeTasks(g.heldTasks, tasks...)
			return nil
		} else if err != nil {
			return err
		}
		_, _, err = g.st.api.AppendStreamContext(g.ctx, g.channel, g.ts, slack.MsgOptionChunks(chunks...))
		if wait, limited := rateLimited(err); limited {
			g.st.budgets.append.pause(wait)
			g.limited = true
			g.heldTasks = mergeTasks(g.heldTasks, tasks...)
			return nil
		}
		if err == nil {
			g.appends++
			g.noteTasks(tasks)
			return nil
		}
	}
	if tasksRefused(err) {
		g.st.refuseTasks(err)
		return nil
	}
	if g.ts == "" && len(g.parts) == 0 && !isStoppedByUser(err) {
		g.st.refused(g.channel, err)
	}
	return err
}

// noteTasks records when the tasks done reached Slack.
func (g *message) noteTasks(tasks []slack.TaskUpdateChunk) {
	for _, t := range tasks {
		if t.Status == slack.TaskCardStatusComplete || t.Status == slack.TaskCardStatusError {
			g.st.log.Debug("task shown done", "task", t.ID, "status", t.Status, "at", time.Now())
		}
	}
}

// stopOpts are the options that end a part with text and the task
// updates held for it: markdown_text alone, or chunks with the tasks.
// The held tasks are taken.
func (g *message) stopOpts(opts []slack.MsgOption, text string) []slack.MsgOption {
	tasks := g.heldTasks
	g.heldTasks = nil
	if len(tasks) == 0 || g.st.tasksOff.Load() {
		if text != "" {
			opts = append(slices.Clip(opts), slack.MsgOptionMarkdownText(text))
		}
		return opts
	}
	chunks := make([]slack.StreamChunk, 0, len(tasks)+1)
	for _, t := range tasks {
		chunks = append(chunks, t)
	}
	if text != "" {
		chunks = append(chunks, slack.NewMarkdownTextChunk(text))
	}
	return append(slices.Clip(opts), slack.MsgOptionChunks(chunks...))
}

// tasksRefused reports whether Slack refused a call for its task chunks.
func tasksRefused(err error) bool {
	se, ok := errors.AsType[slack.SlackErrorResponse](err)
	return ok && (se.Err == "invalid_chunks" || se.Err == "invalid_arguments" || se.Err == "invalid_blocks")
}

// refuseTasks turns tasks off for the workspace: Slack refused them.
func (st *Streamer) refuseTasks(err error) {
	if !st.tasksOff.Swap(true) {
		st.log.Warn("slack refused the task updates of a streamed answer; answers stream without tasks from now on", "err", slackapi.Explain(err))
	}
}
