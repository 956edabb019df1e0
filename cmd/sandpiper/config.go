package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/joho/godotenv"
	"github.com/sethvargo/go-envconfig"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// Configuration comes from the environment and the dotenv files (see
// envLookuper), through go-envconfig. Each env struct is filled with its
// defaults, taken from the package that owns them (bot.Default…,
// sandbox.Default…, agent.Default…), before the variables that are set
// replace them: a default is declared once, and README's table is checked
// against them (TestREADMEDefaults).

// dotenvFiles are read, when present, from the working directory: first
// .env.local, then .env. `vercel env pull` writes .env.local.
var dotenvFiles = []string{".env.local", ".env"}

// envLookuper returns a Lookuper over the process environment backed by
// the dotenv files in dir: a variable set in the environment always wins,
// then the first file that sets it. It also returns the files it read.
// The process environment is not changed: the files' secrets stay out of
// what the bot's children could inherit.
func envLookuper(dir string) (envconfig.Lookuper, []string, error) {
	vars := map[string]string{}
	var read []string
	for _, name := range dotenvFiles {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("config: %w", err)
		}
		got, err := parseDotenv(data)
		if err != nil {
			return nil, nil, fmt.Errorf("config: %s: %w", name, err)
		}
		for k, v := range got {
			if _, ok := vars[k]; !ok {
				vars[k] = v
			}
		}
		read = append(read, name)
	}
	return envconfig.MultiLookuper(envconfig.OsLookuper(), envconfig.MapLookuper(vars)), read, nil
}

// parseDotenv reads a dotenv file with godotenv: KEY=value lines, #
// comments, "export ", 'single-quoted' values kept as written, and
// "double-quoted" values with \n, \t, \" and \\ escapes and line breaks.
// Three things godotenv does its own way are masked while it parses, with
// characters the file does not hold, so that values mean what they did
// before sandpiper used it: it expands $VAR and ${VAR} in bare and
// double-quoted values, with no switch to stop it (a key or a password may
// hold a '$': values stay literal); it reads \t as t; and it drops the end
// of a double-quoted value that ends in an escaped quote.
func parseDotenv(data []byte) (map[string]string, error) {
	free := '\uE000' // private use
	mask := func() string {
		for bytes.ContainsRune(data, free) {
			free++
		}
		free++
		return string(free - 1)
	}
	dollar, quote, tab := mask(), mask(), mask()
	masked := strings.NewReplacer("$", dollar, `\"`, `\`+quote, `\t`, `\`+tab).Replace(string(data))
	vars, err := godotenv.Parse(strings.NewReader(masked))
	// In double quotes godotenv unescapes the masks; elsewhere the
	// backslash stays, as written.
	unmask := strings.NewReplacer(dollar, "$", `\`+quote, `\"`, `\`+tab, `\t`, quote, `"`, tab, "\t")
	if err != nil {
		return nil, errors.New(unmask.Replace(err.Error()))
	}
	for k, v := range vars {
		vars[k] = unmask.Replace(v)
	}
	return vars, nil
}

// loadEnv returns the variables: the environment, then .env.local and .env.
func loadEnv() (envconfig.Lookuper, error) {
	lookup, _, err := envLookuper(".")
	if err != nil {
		return nil, configError(err)
	}
	return lookup, nil
}

// load reads the variables and the part of them f reads; its errors are
// configErrors.
func load[T any](ctx context.Context, f func(context.Context, envconfig.Lookuper) (T, error)) (envconfig.Lookuper, T, error) {
	lookup, err := loadEnv()
	if err != nil {
		var zero T
		return nil, zero, err
	}
	v, err := f(ctx, lookup)
	if err != nil {
		return nil, v, configError(err)
	}
	return lookup, v, nil
}

// process sets the fields of target (a pointer to an env struct) whose
// variables are set, keeping the others. Its errors name the variable.
func process(ctx context.Context, lookup envconfig.Lookuper, target any) error {
	t := reflect.TypeOf(target).Elem()
	for i := range t.NumField() {
		// envconfig does not name the field whose struct decoder failed.
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("env"), ",")
		if v, ok := lookup.Lookup(name); ok && t.Field(i).Type == reflect.TypeFor[byteSize]() {
			if _, err := parseByteSize(v); err != nil {
				return fmt.Errorf("config: %s: %w", name, err)
			}
		}
	}
	err := envconfig.ProcessWith(ctx, &envconfig.Config{Target: target, Lookuper: lookup, DefaultOverwrite: true})
	if err != nil {
		return fmt.Errorf("config: %s", envNames(err.Error(), t))
	}
	return nil
}

// envNames rewrites envconfig's "Field: problem" errors to name the
// environment variable instead of the Go field.
func envNames(msg string, t reflect.Type) string {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("env"), ",")
		if name != "" && strings.HasPrefix(msg, f.Name+":") {
			return name + strings.TrimPrefix(msg, f.Name)
		}
	}
	return msg
}

// lookupNonEmpty looks key up, treating an empty value as unset.
func lookupNonEmpty(l envconfig.Lookuper, key string) (string, bool) {
	v, ok := l.Lookup(key)
	return v, ok && strings.TrimSpace(v) != ""
}

// rangeCheck is one setting's bounds: a start-up error names the
// variable, its value and what it may be.
type rangeCheck struct {
	name, value, want string
	bad               bool
}

// checkRanges returns the error for the first setting out of bounds.
func checkRanges(checks ...rangeCheck) error {
	for _, c := range checks {
		if c.bad {
			return fmt.Errorf("config: %s=%s is out of range: want %s", c.name, c.value, c.want)
		}
	}
	return nil
}

// byteSize is a size in bytes written as 512MiB, 64MB, 1G or 4096. It
// keeps the text it was read from, to name it in errors.
type byteSize struct {
	n    int64
	text string
}

func (b *byteSize) EnvDecode(s string) error {
	n, err := parseByteSize(s)
	if err != nil {
		return err
	}
	*b = byteSize{n, strings.TrimSpace(s)}
	return nil
}

func (b byteSize) String() string {
	if b.text != "" {
		return b.text
	}
	return sandbox.FormatSize(b.n)
}

func parseByteSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := len(t)
	for i > 0 && (t[i-1] < '0' || t[i-1] > '9') {
		i--
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("invalid size %q (want e.g. 512MiB, 64MB, 4096)", s)
	}
	const maxSize = 1 << 50 // 1 PiB: more than any sandbox has

	mult := map[string]int64{
		"": 1, "b": 1,
		"k": 1 << 10, "kb": 1000, "kib": 1 << 10,
		"m": 1 << 20, "mb": 1000 * 1000, "mib": 1 << 20,
		"g": 1 << 30, "gb": 1000 * 1000 * 1000, "gib": 1 << 30,
	}[unit]
	if mult == 0 {
		return 0, fmt.Errorf("invalid size %q: unknown unit %q", s, unit)
	}
	if n > maxSize/mult {
		return 0, fmt.Errorf("invalid size %q: too large", s)
	}
	return n * mult, nil
}

// fileEnv is the file limits' part of the environment; the defaults are
// sandbox's (sandbox.DefaultMaxFileSize …).
type fileEnv struct {
	FileSize   byteSize `env:"SANDPIPER_FILE_MAX_SIZE"`
	RunSize    byteSize `env:"SANDPIPER_FILES_MAX_TOTAL"`
	RunFiles   int      `env:"SANDPIPER_FILES_MAX_COUNT"`
	ThreadSize byteSize `env:"SANDPIPER_WORKSPACE_MAX_SIZE"`
	Uploads    int      `env:"SANDPIPER_UPLOADS_MAX"`
}

func loadFileEnv(ctx context.Context, lookup envconfig.Lookuper) (sandbox.FileLimits, error) {
	d := sandbox.FileLimits{}.WithDefaults()
	e := fileEnv{FileSize: byteSize{n: d.FileSize}, RunSize: byteSize{n: d.RunSize}, RunFiles: d.RunFiles, ThreadSize: byteSize{n: d.ThreadSize}, Uploads: d.Uploads}
	if err := process(ctx, lookup, &e); err != nil {
		return sandbox.FileLimits{}, err
	}
	if err := checkRanges(
		rangeCheck{"SANDPIPER_FILE_MAX_SIZE", e.FileSize.String(), "at least 1KiB", e.FileSize.n < 1<<10},
		rangeCheck{"SANDPIPER_FILES_MAX_TOTAL", e.RunSize.String(), "at least SANDPIPER_FILE_MAX_SIZE (" + e.FileSize.String() + ")", e.RunSize.n < e.FileSize.n},
		rangeCheck{"SANDPIPER_FILES_MAX_COUNT", strconv.Itoa(e.RunFiles), fmt.Sprintf("1 to %d", sandbox.DefaultInputFiles), e.RunFiles < 1 || e.RunFiles > sandbox.DefaultInputFiles},
		rangeCheck{"SANDPIPER_WORKSPACE_MAX_SIZE", e.ThreadSize.String(), "at least SANDPIPER_FILES_MAX_TOTAL (" + e.RunSize.String() + ")", e.ThreadSize.n < e.RunSize.n},
		rangeCheck{"SANDPIPER_UPLOADS_MAX", strconv.Itoa(e.Uploads), "at least 1", e.Uploads < 1},
	); err != nil {
		return sandbox.FileLimits{}, err
	}
	return sandbox.FileLimits{FileSize: e.FileSize.n, RunSize: e.RunSize.n, RunFiles: e.RunFiles, ThreadSize: e.ThreadSize.n, Uploads: e.Uploads}, nil
}

// agentConfig is what every command that runs the agent reads: the model,
// the sandbox and the file limits.
type agentConfig struct {
	model   modelConfig
	sandbox sandboxConfig
	files   sandbox.FileLimits
}

// loadAgentConfig reads the agent's variables; its errors name the variable
// to fix.
func loadAgentConfig(ctx context.Context, lookup envconfig.Lookuper) (agentConfig, error) {
	var c agentConfig
	var err error
	if c.model, err = loadModelConfig(ctx, lookup); err != nil {
		return c, err
	}
	if c.sandbox, err = loadSandboxConfig(ctx, lookup); err != nil {
		return c, err
	}
	if c.files, err = loadFileEnv(ctx, lookup); err != nil {
		return c, err
	}
	return c, nil
}

// probeTimeout bounds asking the sandbox which Python modules it has.
const probeTimeout = 30 * time.Second

// start builds the model, the sandbox and the agent running code in it,
// telling the agent which Python the sandbox has. The caller closes the
// sandbox.
func (c agentConfig) start(ctx context.Context, log *slog.Logger) (*agent.Agent, agent.Runtime, sandboxBackend, error) {
	model, err := c.model.newModel(log)
	if err != nil {
		return nil, agent.Runtime{}, nil, configError(err)
	}
	sb, err := newSandbox(ctx, c.sandbox, log)
	if err != nil {
		return nil, agent.Runtime{}, nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	rt, err := agent.ProbeRuntime(pctx, sb)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			sb.Close()
			return nil, agent.Runtime{}, nil, ctx.Err()
		}
		log.Warn("could not list the sandbox's Python modules; the model will not know them", "err", err)
	}
	tool := agent.NewExecuteCode(sb, agent.ExecuteCodeOptions{Runtime: rt, Limits: c.sandbox.limits(), Logger: log})
	return c.model.newAgent(model, []agent.Tool{tool}, log), rt, sb, nil
}
