// Package config reads sandpiper's configuration: the environment, then
// .env.local and .env (read with godotenv, never loaded into the process
// environment), into env structs; here those of the sandbox and of the
// file limits, which every command reads, and in botconfig and
// agentconfig those of the bot and of the model, which `sandpiper exec`
// does not link. Each env struct is filled with its defaults, taken from
// the package that owns them (sandbox.Default…, the backends', bot's,
// agent's and the providers'), before the variables that are set replace
// them: a default is declared once, and README's table is checked against
// them (cmd/sandpiper's TestREADMEDefaults). Errors name the variable to
// fix.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/joho/godotenv"
	"github.com/sethvargo/go-envconfig"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// dotenvFiles are read, when present, from the working directory: first
// .env.local, then .env. `vercel env pull` writes .env.local.
var dotenvFiles = []string{".env.local", ".env"}

// Lookup returns a Lookuper over the process environment backed by
// the dotenv files in dir: a variable set in the environment always wins,
// then the first file that sets it. It also returns the files it read.
// The process environment is not changed: the files' secrets stay out of
// what the bot's children could inherit.
func Lookup(dir string) (envconfig.Lookuper, []string, error) {
	vars := map[string]string{}
	from := map[string]string{} // the file that set each of vars
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
				vars[k], from[k] = v, name
			}
		}
		read = append(read, name)
	}
	return namedLookuper{envconfig.MultiLookuper(envconfig.OsLookuper(), envconfig.MapLookuper(vars)), vars, from}, read, nil
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

// ByteSize is a size in bytes written as 512MiB, 64MB, 1G or 4096. It
// keeps the text it was read from, to name it in errors.
type ByteSize struct {
	n    int64
	text string
}

// Bytes returns the size.
func (b ByteSize) Bytes() int64 { return b.n }

func (b *ByteSize) EnvDecode(s string) error {
	n, err := parseByteSize(s)
	if err != nil {
		return err
	}
	*b = ByteSize{n, strings.TrimSpace(s)}
	return nil
}

func (b ByteSize) String() string {
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

// OnOff is a switch, written as every switch is: on or off, true or
// false, yes or no, 1 or 0, in any case.
type OnOff bool

// switchWords are the words a switch takes.
var switchWords = map[string]OnOff{"on": true, "true": true, "yes": true, "1": true, "off": false, "false": false, "no": false, "0": false}

// EnvDecode reads one of switchWords.
func (o *OnOff) EnvDecode(s string) error {
	v, ok := switchWords[strings.ToLower(strings.TrimSpace(s))]
	if !ok {
		return fmt.Errorf("%q is not on or off", s)
	}
	*o = v
	return nil
}

// String is "on" or "off".
func (o OnOff) String() string {
	if o {
		return "on"
	}
	return "off"
}
