package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/bot"
	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/cli"
	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/config"
	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/config/agentconfig"
	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/config/botconfig"
	"github.com/sandpiper-bot/sandpiper/sandbox"
	"github.com/sandpiper-bot/sandpiper/sandbox/local"
)

// runDoctor is `sandpiper doctor`: check the Slack tokens and scopes, the
// model endpoint and key, the sandbox and the data directory, and say what
// to fix. It exits 1 when anything failed.
func runDoctor(ctx context.Context, args []string, _ io.Reader, stdout, _ io.Writer) error {
	if err := noArgs("doctor", args); err != nil {
		return err
	}
	var checks []bot.Check
	var lookup envconfig.Lookuper
	fail := func(name string, err error) {
		checks = append(checks, bot.Check{Name: name, Detail: config.Locate(lookup, err).Error()})
	}
	pass := func(name, detail string) { checks = append(checks, bot.Check{Name: name, OK: true, Detail: detail}) }
	quiet := slog.New(slog.DiscardHandler)

	lookup, read, err := config.Lookup(".")
	if err != nil {
		fail("configuration", err)
		lookup = envconfig.OsLookuper()
	} else if len(read) > 0 {
		pass("configuration", "read "+strings.Join(read, ", "))
	}
	env, err := botconfig.Load(ctx, lookup)
	if err != nil {
		fail("configuration", err)
	} else {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		checks = append(checks, bot.Doctor(cctx, env.Config(quiet))...)
		cancel()
	}
	if mc, err := agentconfig.LoadModel(ctx, lookup); err != nil {
		fail("model", err)
	} else if model, err := mc.New(quiet); err != nil {
		fail("model", err)
	} else {
		mctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		resp, err := model.Generate(mctx, &agent.Request{
			Instructions: "Reply with the single word OK.",
			Messages:     []agent.Message{agent.UserMessage("Say OK.")},
		}, nil)
		cancel()
		if err != nil {
			fail("model "+mc.Model, fmt.Errorf("%v (check SANDPIPER_MODEL, SANDPIPER_MODEL_BASE_URL and the key; %s)", err, mc.KeyNote()))
		} else if reply := strings.TrimSpace(resp.Message.Text); reply == "" {
			fail("model "+mc.Model, fmt.Errorf("%s at %s answered with nothing to the question \"Say OK.\" (%s); check SANDPIPER_MODEL: is it a chat model the server serves?", mc.API, mc.BaseURL, mc.KeyNote()))
		} else {
			pass("model "+mc.Model, fmt.Sprintf("%s at %s answered %q (%s)", mc.API, mc.BaseURL, reply, mc.KeyNote()))
		}
		if note := mc.ModelNote(); note != "" {
			checks = append(checks, bot.Check{Name: "model id", OK: true, Warn: true, Detail: note})
		}
	}

	if sbCfg, err := config.LoadSandbox(ctx, lookup); err != nil {
		fail("sandbox", err)
	} else if p, ok := sbCfg.Settings().(config.Prechecker); ok && !precheck(ctx, &checks, p, sbCfg, quiet) {
		// The backend's own checks (the cluster's) said what to fix.
	} else if sb, err := sbCfg.New(ctx, quiet); err != nil {
		fail("sandbox", err)
	} else {
		defer sb.Close()
		res, err := sb.Run(ctx, sandbox.Request{Code: "print(6 * 7)"})
		switch {
		case err != nil:
			fail("sandbox", err)
		case strings.TrimSpace(string(res.Stdout)) != "42":
			fail("sandbox", fmt.Errorf("print(6 * 7) gave exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr))
		default:
			detail := fmt.Sprintf("print(6 * 7) → 42 in %s", res.Duration.Round(time.Millisecond))
			if e, ok := sb.(interface{ Enforcement() string }); ok {
				detail += "; " + e.Enforcement()
			} else {
				for _, u := range sb.Info().Unenforced {
					detail += fmt.Sprintf("; %s not enforced (%s)", u.Field, u.Why)
				}
			}
			pass("sandbox", detail)
			py, isLocal := sb.(interface{ Python() local.Python })
			ls, _ := sbCfg.Settings().(*config.Local)
			if isLocal && ls != nil {
				pass("sandbox python", describePython(ls, py.Python()))
			}
			if w, ok := sb.(interface {
				Warmth(context.Context) (string, error)
			}); ok {
				wctx, cancel := context.WithTimeout(ctx, time.Minute)
				switch msg, err := w.Warmth(wctx); {
				case ls != nil && len(ls.PreloadModules()) == 0:
					pass("sandbox warm runs", "off (SANDPIPER_SANDBOX_PRELOAD is empty): every run starts cold")
				case err != nil:
					fail("sandbox warm runs", fmt.Errorf("%v; fix the module for SANDPIPER_PYTHON or leave it out of SANDPIPER_SANDBOX_PRELOAD", err))
				default:
					pass("sandbox warm runs", msg)
				}
				cancel()
			}
			pctx, cancel := context.WithTimeout(ctx, probeTimeout)
			rt, err := agent.ProbeRuntime(pctx, sb)
			cancel()
			switch missing := rt.Missing(config.DataModules...); {
			case err != nil:
				fail("sandbox Python modules", err)
			case len(missing) > 0:
				msg := fmt.Sprintf("%s; missing %s, which data questions, files and charts need: install them for the interpreter in SANDPIPER_PYTHON (the Docker image has them)", rt, strings.Join(missing, ", "))
				if isLocal {
					// Another interpreter on this machine may have them.
					if others := local.PythonsWith(ctx, py.Python().Executable, config.DataModules, os.Getenv("PATH"), nil); len(others) > 0 {
						msg += fmt.Sprintf(", or use %s, which has them all: SANDPIPER_PYTHON=%s", others[0], others[0])
					}
				}
				fail("sandbox Python modules", errors.New(msg))
			default:
				pass("sandbox Python modules", rt.String())
			}
		}
	}
	files, err := config.LoadFiles(ctx, lookup)
	if err != nil {
		fail("file limits", err)
	}
	checks = append(checks, sourceChecks(ctx, lookup, files.Limits())...)

	failed := 0
	for _, c := range checks {
		mark := "ok  "
		if c.Warn {
			mark = "warn"
		}
		if !c.OK {
			mark = "FAIL"
			failed++
		}
		fmt.Fprintf(stdout, "%s %s: %s\n", mark, c.Name, c.Detail)
	}
	if failed > 0 {
		fmt.Fprintf(stdout, "\n%d check(s) failed; fix them and run sandpiper doctor again.\n", failed)
		return cli.Exit(1)
	}
	fmt.Fprintln(stdout, "\nAll checks passed. Start the bot with: sandpiper run")
	return nil
}

// precheck adds the backend's own checks (the cluster's: reachable, CRDs,
// RBAC, warm pool, one run) and reports whether they passed.
func precheck(ctx context.Context, checks *[]bot.Check, p config.Prechecker, cfg config.Sandbox, log *slog.Logger) bool {
	ok := true
	for _, c := range p.Precheck(ctx, cfg, log) {
		*checks = append(*checks, bot.Check{Name: c.Name, OK: c.OK, Warn: c.Warn, Detail: c.Detail})
		ok = ok && c.OK
	}
	return ok
}

// describePython says which interpreter the sandbox runs, and how it was
// found from SANDPIPER_PYTHON, or chosen without it: the real executable
// behind a symbolic link or a version manager's shim.
func describePython(ls *config.Local, py local.Python) string {
	name := cmp.Or(ls.Python, local.DefaultPython)
	if ls.Choice != nil {
		name = ls.Choice.Python
	}
	s := fmt.Sprintf("%s (Python %s)", py.Executable, py.Version)
	found, err := exec.LookPath(name)
	switch {
	case err != nil || found == py.Executable:
	case local.IsELF(mustEvalSymlinks(found)):
		s += ", the file " + found + " links to"
	default:
		s += ", which the shim " + found + " runs; set SANDPIPER_PYTHON=" + py.Executable + " to skip the shim"
	}
	if ls.Choice != nil {
		s += " (" + ls.Choice.Why + ")"
	}
	return s
}

// mustEvalSymlinks is filepath.EvalSymlinks, or path when it fails.
func mustEvalSymlinks(path string) string {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real
	}
	return path
}

// sourceChecks connects to every data source, checks its role and counts
// its tables: a source that cannot be used fails, a role that could
// write warns.
func sourceChecks(ctx context.Context, lookup envconfig.Lookuper, files sandbox.FileLimits) []bot.Check {
	c, err := agentconfig.LoadSources(ctx, lookup)
	if err != nil {
		return []bot.Check{{Name: "data sources", Detail: err.Error()}}
	}
	set, err := c.Open(files, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		return []bot.Check{{Name: "data sources", Detail: err.Error()}}
	}
	if set == nil {
		return nil // none configured: nothing to say
	}
	defer set.Close()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var checks []bot.Check
	for _, s := range set.Check(sctx) {
		checks = append(checks, bot.Check{Name: "data source " + s.Name, OK: s.OK, Warn: s.Warn, Detail: s.Detail})
	}
	return checks
}
