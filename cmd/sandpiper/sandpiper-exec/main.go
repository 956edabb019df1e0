// Command sandpiper-exec is `sandpiper exec` alone: it runs Python once in
// the configured sandbox, as `sandpiper exec [-v] [-out DIR] [-c CODE]`
// does, without linking the bot, the agent or the terminal UI, whose
// packages take longer to initialise than a sandbox takes to make.
// sandpiper hands `sandpiper exec` over to it, before its own Go runtime
// starts, when it is installed beside sandpiper (cmd/sandpiper/exec_linux.c);
// build and install the two together.
package main

import (
	"context"
	"os"

	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/cli"
	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/execcmd"
)

func main() {
	e := execcmd.Exec{HandBack: execcmd.TakeHandover(os.Args[1:])}
	cli.Main(func(ctx context.Context) int {
		return cli.Report(os.Stderr, e.Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	})
}
