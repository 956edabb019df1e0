package agent_test

import (
	"context"
	"fmt"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// oneCallModel calls executeCode once, then answers with the tool's result.
type oneCallModel struct{}

func (oneCallModel) ID() string { return "example/model" }

func (oneCallModel) Generate(_ context.Context, req *agent.Request, text func(string)) (*agent.Response, error) {
	last := req.Messages[len(req.Messages)-1]
	if last.Role == agent.RoleTool {
		text("It is -592694.")
		return &agent.Response{Message: agent.Message{Role: agent.RoleAssistant, Text: "It is -592694."}, Finish: agent.FinishStop}, nil
	}
	call := agent.ToolCall{ID: "call_1", Name: agent.ExecuteCodeName, Input: []byte(`{"code": "print(5 + 5 - 84**3)"}`)}
	return &agent.Response{Message: agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{call}}, Finish: agent.FinishToolCalls}, nil
}

// fixedRunner stands in for a sandbox such as local.Sandbox.
type fixedRunner struct{}

func (fixedRunner) Run(context.Context, sandbox.Request) (*sandbox.Result, error) {
	return &sandbox.Result{Stdout: []byte("-592694\n")}, nil
}

func (fixedRunner) Info() sandbox.Info {
	return sandbox.Info{Backend: "fixed", Limits: sandbox.Limits{}.WithDefaults()}
}

func Example() {
	a := &agent.Agent{
		Model: oneCallModel{}, // in real use: openai.New(...) or anthropic.New(...)
		Tools: []agent.Tool{agent.NewExecuteCode(fixedRunner{}, agent.ExecuteCodeOptions{})},
	}
	obs := agent.ObserverFuncs{
		OnToolCallStarted: func(e agent.ToolCallEvent) { fmt.Printf("running: %s\n", e.Code) },
		OnToolCallFinished: func(e agent.ToolResultEvent) {
			fmt.Printf("printed: %s", e.Sandbox.Stdout)
			fmt.Printf("model reads: %s\n", e.Result.Content)
		},
	}
	history := []agent.Message{agent.UserMessage("What is 5 + 5 minus 84 cubed?")}
	out, err := a.Run(context.Background(), history, agent.RunOptions{Observer: obs})
	if err != nil {
		fmt.Println(err)
		return
	}
	history = append(history, out.Messages...) // for the next question
	fmt.Printf("%s (%s after %d steps; history has %d messages)\n", out.Answer, out.Stop, out.Steps, len(history))
	// Output:
	// running: print(5 + 5 - 84**3)
	// printed: -592694
	// model reads: {"output":"-592694\n","stderr":"","exitCode":0}
	// It is -592694. (answered after 2 steps; history has 4 messages)
}
