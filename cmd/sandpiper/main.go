// Command sandpiper is a Slack bot that answers math and data questions by
// running model-written Python in a fresh sandbox per run.
//
// Usage:
//
//	sandpiper [run]          connect to Slack and answer questions
//	sandpiper ask [QUESTION] ask once, or chat in the terminal
//	sandpiper exec [-c CODE] run Python once in the configured sandbox
//	sandpiper doctor         check the configuration
//	sandpiper healthcheck    exit 0 when the running bot is healthy
//
// This package reads the flags and the configuration and wires the
// packages together: bot (the Slack front end), internal/chat (the
// terminal one), agent and its model providers, and the sandbox backends.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/sandpiper-bot/sandpiper/sandbox/safetext"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	// The first signal starts a graceful stop; a second one ends the
	// process at once, as without a handler.
	context.AfterFunc(ctx, stop)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// A command runs with the process's arguments (after its name) and
// standard streams. It returns nil for exit 0; any other error is printed
// once by [run], and ends the process with 1 or the [exitError]'s code.
type command func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error

var commands = map[string]command{
	"run":         runBot,
	"ask":         runAsk,
	"doctor":      runDoctor,
	"exec":        runExec,
	"healthcheck": runHealthcheck,
}

// run is main without the process: it runs the command args name, prints
// its error, if any, on stderr, and returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	name := "run"
	if len(args) > 0 {
		name, args = args[0], args[1:]
	}
	var err error
	switch cmd, ok := commands[name]; {
	case ok:
		err = cmd(ctx, args, stdin, stdout, stderr)
	case name == "help" || name == "-h" || name == "-help" || name == "--help":
		fmt.Fprint(stdout, usage)
	default:
		err = usageError(fmt.Errorf("unknown command %q", name), usage)
	}
	if err == nil {
		return 0
	}
	code := 1
	if ee, ok := errors.AsType[*exitError](err); ok {
		code = ee.code
		if ee.err == nil {
			return code // the command said all there was to say
		}
	}
	// Errors quote what a model API's server, a sandbox or a file said:
	// neutralised, as everything else shown.
	fmt.Fprintf(stderr, "sandpiper: %s\n", safetext.Text(err.Error()))
	return code
}

// exitError ends a command with an exit code other than 1; err is what to
// print, or nil when the command printed all there was to say.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// Exit codes besides 0 and 1.
const (
	exitUsage       = 2   // bad arguments or configuration
	exitInterrupted = 130 // SIGINT, as a shell reports it
)

// configError is a problem with the arguments or the configuration: the
// command exits 2.
func configError(err error) error { return &exitError{exitUsage, err} }

// noArgs refuses arguments given to a command that takes none.
func noArgs(cmd string, args []string) error {
	if len(args) > 0 {
		return usageError(fmt.Errorf("%s takes no arguments", cmd), usage)
	}
	return nil
}

// usageError is configError followed by the command's usage.
func usageError(err error, usage string) error {
	return configError(fmt.Errorf("%w\n\n%s", err, strings.TrimRight(usage, "\n")))
}

const usage = `Usage:
  sandpiper [run]           connect to Slack and answer questions
  sandpiper ask [QUESTION]  ask once, or chat in the terminal without a question
  sandpiper exec [-c CODE]  run Python once in the configured sandbox (code on stdin without -c)
  sandpiper doctor          check the configuration and print what to fix
  sandpiper healthcheck     exit 0 when the running bot's /healthz is OK (for containers)

Configuration comes from the environment (and .env.local, .env); see README.md.
`
