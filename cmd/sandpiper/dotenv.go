package main

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sethvargo/go-envconfig"
)

// dotenvFiles are read, when present, from the working directory: first
// .env.local, then .env. `vercel env pull` writes .env.local.
var dotenvFiles = []string{".env.local", ".env"}

// envLookuper returns a Lookuper over the process environment backed by
// the dotenv files in dir: a variable set in the environment always wins,
// then the first file that sets it. It also returns the files it read.
// The process environment is not changed.
func envLookuper(dir string) (envconfig.Lookuper, []string, error) {
	vars := map[string]string{}
	var read []string
	for _, name := range dotenvFiles {
		path := filepath.Join(dir, name)
		f, err := os.Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("config: %w", err)
		}
		got, err := parseDotenv(bufio.NewScanner(f))
		f.Close()
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

// parseDotenv reads KEY=value lines: blank lines and # comments are
// skipped, "export " is allowed, values may be "double-quoted" (with \n,
// \t, \" and \\ escapes, and line breaks), 'single-quoted' (literal) or
// bare (trimmed, with a trailing " # comment" removed).
func parseDotenv(sc *bufio.Scanner) (map[string]string, error) {
	sc.Buffer(nil, 1<<20)
	vars := map[string]string{}
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		text = strings.TrimPrefix(text, "export ")
		key, value, ok := strings.Cut(text, "=")
		key = strings.TrimSpace(key)
		if !ok || !validEnvName(key) {
			return nil, fmt.Errorf("line %d: want KEY=value", line)
		}
		value = strings.TrimSpace(value)
		switch {
		case strings.HasPrefix(value, `"`):
			// A double-quoted value may span lines.
			start := line
			for !closedQuote(value[1:]) {
				if !sc.Scan() {
					return nil, fmt.Errorf("line %d: unterminated quoted value", start)
				}
				line++
				value += "\n" + sc.Text()
			}
			body := value[1:]
			end := closingQuote(body)
			if rest := strings.TrimSpace(body[end+1:]); rest != "" && !strings.HasPrefix(rest, "#") {
				return nil, fmt.Errorf("line %d: text after the closing quote", line)
			}
			value = unescape(body[:end])
		case strings.HasPrefix(value, `'`):
			end := strings.IndexByte(value[1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("line %d: unterminated quoted value", line)
			}
			value = value[1 : end+1]
		default:
			if i := strings.Index(value, " #"); i >= 0 {
				value = strings.TrimSpace(value[:i])
			}
		}
		vars[key] = value
	}
	return vars, sc.Err()
}

// closingQuote is the index of the first unescaped " in s, or -1.
func closingQuote(s string) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

func closedQuote(s string) bool { return closingQuote(s) >= 0 }

func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch s[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		default: // \" \\ and anything else: the character itself
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// lookupNonEmpty looks key up, treating an empty value as unset.
func lookupNonEmpty(l envconfig.Lookuper, key string) (string, bool) {
	v, ok := l.Lookup(key)
	return v, ok && strings.TrimSpace(v) != ""
}
