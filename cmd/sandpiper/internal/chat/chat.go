package chat

import (
	"bufio"
	"context"
	"io"
	"strings"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/sandbox/safetext"
)

// Agent answers with a tool loop; [*agent.Agent] implements it.
type Agent interface {
	Run(ctx context.Context, history []agent.Message, opts agent.RunOptions) (*agent.Outcome, error)
}

// Chat keeps a conversation with a going, a line of stdin at a time,
// until EOF (Ctrl+D), "exit", or ctx ends (Ctrl+C). Its runs share ws;
// each question is told of the files in ws when they changed since the
// model was last told. On a terminal it first shows title (the model and
// the sandbox's Python).
func (u *UI) Chat(ctx context.Context, a Agent, ws agent.Workspace, title string, stdin io.Reader) {
	interactive := isTerminal(stdin)
	if interactive {
		u.printf("%s  %s\n", u.bold("Sandpiper")+u.dim(" · "+safetext.Line(title)),
			u.dim("Enter sends · Ctrl+D or Ctrl+C leaves"))
	}
	lines := make(chan string)
	go func() { // stays blocked in Read when ctx ends first; the process is leaving then
		defer close(lines)
		r := bufio.NewReader(stdin)
		for {
			line, err := r.ReadString('\n')
			if line != "" || err == nil {
				select {
				case lines <- strings.TrimRight(line, "\r\n"):
				case <-ctx.Done():
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()

	var history []agent.Message
	described := "" // the workspace as last described to the model
	for {
		if interactive {
			u.printf("\n%s ", u.cyan("›"))
		}
		var line string
		var ok bool
		select {
		case line, ok = <-lines:
		case <-ctx.Done():
		}
		if !ok {
			if interactive {
				u.printf("\n")
			}
			return
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if line == "exit" || line == "quit" {
			return
		}
		if !interactive {
			u.printf("\n%s %s\n", u.cyan("›"), safetext.Line(line)) // a transcript reads better with the questions
		}
		text := line
		ls, err := ws.Files(ctx)
		if err != nil {
			u.Errorf("%v", err)
			continue
		}
		var files []agent.InputFile
		for _, f := range ls {
			files = append(files, agent.InputFile{File: f})
		}
		if desc, _ := agent.DescribeFiles(ctx, files, nil); desc != described {
			text += "\n\n" + desc
			described = desc
		}
		history = append(history, agent.UserMessage(text))
		out, err := a.Run(ctx, history, agent.RunOptions{Workspace: ws, Observer: u, Sources: u.sources, User: u.user, Channel: "terminal"})
		switch {
		case ctx.Err() != nil:
			u.printf("\n")
			return
		case err != nil:
			// Forget the failed turn, so the question can be asked again.
			history = history[:len(history)-1]
			u.Errorf("%v", err)
			continue
		}
		history = append(history, out.Messages...)
	}
}
