package bot

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// agentAnswerer answers with an [agent.Agent].
type agentAnswerer struct {
	agent *agent.Agent
}

// NewAgentAnswerer returns an [Answerer] that runs a's tool loop: the
// thread's history becomes the conversation, and the executeCode calls
// become tool cards.
func NewAgentAnswerer(a *agent.Agent) Answerer { return &agentAnswerer{agent: a} }

func (aa *agentAnswerer) Answer(ctx context.Context, q Question, p Progress) (Answer, error) {
	obs := agent.ObserverFuncs{
		OnToolCallStarted: func(e agent.ToolCallEvent) {
			if e.Call.Name == agent.ExecuteCodeName {
				p.RunStarted(ctx, e.Call.ID, e.Code)
			}
		},
		OnToolCallFinished: func(e agent.ToolResultEvent) {
			if e.Call.Name == agent.ExecuteCodeName {
				p.RunFinished(ctx, e.Call.ID, e.Sandbox, e.Err, e.Duration)
			}
		},
	}
	// The answer's runs share a workspace: they start with the thread's
	// files and see what the answer's earlier runs wrote.
	var files []sandbox.File
	for _, f := range q.Files {
		files = append(files, sandbox.File{Name: f.Name, Data: f.Data})
	}
	ctx = agent.WithWorkspace(ctx, agent.NewWorkspace(files, q.FilesSize))
	msgs, caps := historyMessages(ctx, q)
	if r, ok := p.(CapReporter); ok {
		for _, c := range caps {
			r.CapFired(c)
		}
	}
	out, err := aa.agent.Run(ctx, msgs, obs)
	var ans Answer
	if out != nil {
		ans = Answer{Text: out.Answer, Model: out.Model, Steps: out.Steps, InputTokens: out.Usage.InputTokens, OutputTokens: out.Usage.OutputTokens}
		switch out.Stop {
		case agent.StopStepLimit:
			ans.Text = ""
			ans.Incomplete = "step limit"
			if err == nil {
				err = fmt.Errorf("after %d steps: %w", out.Steps, ErrStepLimit)
			}
		case agent.StopLength:
			if ans.Text != "" {
				ans.Text += "\n\n_(The answer was cut off by the model's output limit.)_"
			}
		case agent.StopRefused:
			if strings.TrimSpace(ans.Text) == "" {
				ans.Text = "_The model declined to answer this question._"
			}
		}
	}
	return ans, err
}

// historyMessages turns the thread's turns and the new question into the
// agent's conversation. Earlier runs become executeCode calls and results,
// so the model knows what it computed before. caps are those that fired
// while describing the files.
func historyMessages(ctx context.Context, q Question) (msgs []agent.Message, caps []sandbox.Cap) {
	for i, t := range q.History {
		if t.Ignored {
			continue // a message the bot did not respond to
		}
		msgs = append(msgs, agent.UserMessage(t.Question))
		if len(t.Runs) > 0 {
			call := agent.Message{Role: agent.RoleAssistant}
			res := agent.Message{Role: agent.RoleTool}
			for j, r := range t.Runs {
				id := fmt.Sprintf("call_h%d_%d", i+1, j+1)
				input, _ := json.Marshal(map[string]string{"code": r.Code})
				call.ToolCalls = append(call.ToolCalls, agent.ToolCall{ID: id, Name: agent.ExecuteCodeName, Input: input})
				res.ToolResults = append(res.ToolResults, agent.ToolResult{CallID: id, Name: agent.ExecuteCodeName, Content: r.Output})
			}
			msgs = append(msgs, call, res)
		}
		answer := t.Answer
		if answer == "" {
			answer = "(I did not answer this question.)"
		}
		msgs = append(msgs, agent.Message{Role: agent.RoleAssistant, Text: answer})
	}
	text, caps := questionText(ctx, q)
	return append(msgs, agent.UserMessage(text)), caps
}

// questionText is the question with the files of the working directory
// described after it, and the caps that fired describing them.
func questionText(ctx context.Context, q Question) (string, []sandbox.Cap) {
	var files []agent.InputFile
	for _, f := range q.Files {
		files = append(files, agent.InputFile{File: sandbox.File{Name: f.Name, Data: f.Data}, Source: f.Source})
	}
	desc, caps := agent.DescribeFiles(ctx, files, q.FileNotes)
	if desc == "" {
		return q.Text, caps
	}
	return q.Text + "\n\n" + desc, caps
}
