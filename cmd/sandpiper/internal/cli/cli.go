// Package cli holds what sandpiper's commands share with sandpiper-exec,
// the lean binary of `sandpiper exec`: the errors that carry an exit code
// and how they are reported, loading the configuration, and saving the
// files a program wrote.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/sethvargo/go-envconfig"

	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/config"
	"github.com/sandpiper-bot/sandpiper/sandbox"
	"github.com/sandpiper-bot/sandpiper/sandbox/safetext"
)

// Main runs a program's f, with a context that ends at the first SIGINT
// or SIGTERM (a graceful stop; a second signal ends the process at once,
// as without a handler), and exits with the code f returns.
func Main(f func(ctx context.Context) int) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	context.AfterFunc(ctx, stop)
	code := f(ctx)
	stop()
	os.Exit(code)
}

// Exit codes besides 0 and 1.
const (
	ExitUsage       = 2   // bad arguments or configuration
	ExitInterrupted = 130 // SIGINT, as a shell reports it
)

// ExitError ends a command with an exit code other than 1; Err is what to
// print, or nil when the command printed all there was to say.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Exit ends a command with code, and nothing more to print.
func Exit(code int) error { return &ExitError{Code: code} }

// ConfigError is a problem with the arguments or the configuration: the
// command exits 2.
func ConfigError(err error) error { return &ExitError{Code: ExitUsage, Err: err} }

// UsageError is ConfigError followed by the command's usage.
func UsageError(err error, usage string) error {
	return ConfigError(fmt.Errorf("%w\n\n%s", err, strings.TrimRight(usage, "\n")))
}

// Report prints a command's error, if any, on stderr, and returns the
// process's exit code: 0 for nil, the [ExitError]'s code, or 1.
func Report(stderr io.Writer, err error) int {
	if err == nil {
		return 0
	}
	code := 1
	if ee, ok := errors.AsType[*ExitError](err); ok {
		code = ee.Code
		if ee.Err == nil {
			return code // the command said all there was to say
		}
	}
	// Errors quote what a model API's server, a sandbox or a file said:
	// neutralised, as everything else shown.
	fmt.Fprintf(stderr, "sandpiper: %s\n", safetext.Text(err.Error()))
	return code
}

// LoadEnv returns the variables: the environment, then .env.local and
// .env of the working directory.
func LoadEnv() (envconfig.Lookuper, error) {
	lookup, _, err := config.Lookup(".")
	if err != nil {
		return nil, ConfigError(err)
	}
	return lookup, nil
}

// Load reads the variables and the part of them f reads; its errors are
// ConfigErrors, naming the dotenv file that set a wrong value.
func Load[T any](ctx context.Context, f func(context.Context, envconfig.Lookuper) (T, error)) (envconfig.Lookuper, T, error) {
	lookup, err := LoadEnv()
	if err != nil {
		var zero T
		return nil, zero, err
	}
	v, err := f(ctx, lookup)
	if err != nil {
		return nil, v, ConfigError(config.Locate(lookup, err))
	}
	return lookup, v, nil
}

// SaveOutput writes a file the program wrote under dir, through an
// os.Root so that no name leaves it, and returns its path. The name is
// neutralised first ([safetext.Line]): a control character or a bidi
// override in it becomes a visible stand-in, so the file is named on
// disk as the card shows it, and no later listing of dir is disguised.
func SaveOutput(dir string, f sandbox.File) (string, error) {
	name := safetext.Line(f.Name)
	if !filepath.IsLocal(name) {
		return "", fmt.Errorf("bad name %q", name)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	if d := filepath.Dir(name); d != "." {
		if err := root.MkdirAll(d, 0o755); err != nil {
			return "", err
		}
	}
	if err := root.WriteFile(name, f.Data, 0o644); err != nil {
		return "", err
	}
	return filepath.Join(dir, name), nil
}
