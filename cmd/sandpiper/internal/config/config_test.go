package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sethvargo/go-envconfig"
)

// failed fails t unless err is what want says (no error when want is "",
// else an error holding want), and reports whether err is an error: the
// case ends there.
func failed(t *testing.T, err error, want string) bool {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatal(err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Fatalf("err = %v, want one with %q", err, want)
	}
	return err != nil
}

func TestParseByteSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"512MiB", 512 << 20, true},
		{"64MB", 64_000_000, true},
		{"1G", 1 << 30, true},
		{"4096", 4096, true},
		{" 2 kib ", 2048, true},
		{"", 0, false},
		{"-1MiB", 0, false},
		{"12 parsecs", 0, false},
		{"MiB", 0, false},
		{"1024TiB", 0, false},
		{"1048576GiB", 1 << 50, true},
		{"17179869185GiB", 0, false}, // would wrap around to 1GiB
		{"9999999999999GiB", 0, false},
	} {
		got, err := parseByteSize(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseByteSize(%q) = %d, %v; want %d, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// TestREADMEDefaults: the Default column of README's variable table says
// what the configuration takes when a variable is unset. The defaults are
// declared once, in the packages that own them; this holds README to them.
func TestREADMEDefaults(t *testing.T) {
	readme, err := os.ReadFile("../../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]string{} // variable → the first `value` of its Default cell
	for _, m := range regexp.MustCompile("(?m)^\\| `([A-Z0-9_]+)` \\| [^|`]*`([^`]*)`").FindAllSubmatch(readme, -1) {
		documented[string(m[1])] = string(m[2])
	}
	none := envconfig.MapLookuper(nil)
	ctx := t.Context()
	b, err := LoadBot(ctx, none)
	if err != nil {
		t.Fatal(err)
	}
	m, err := LoadModel(ctx, envconfig.MapLookuper(map[string]string{"SANDPIPER_MODEL_API_KEY": "k"}))
	if err != nil {
		t.Fatal(err)
	}
	s, err := LoadSandbox(ctx, none)
	if err != nil {
		t.Fatal(err)
	}
	lim, err := LoadFiles(ctx, none)
	if err != nil {
		t.Fatal(err)
	}
	f := files{byteSize{n: lim.FileSize}, byteSize{n: lim.RunSize}, lim.RunFiles, byteSize{n: lim.ThreadSize}, lim.Uploads}
	st, err := LoadState(ctx, none)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, env := range []any{b, m, s, f, st} {
		v := reflect.ValueOf(env)
		for i := range v.NumField() {
			name := v.Type().Field(i).Tag.Get("env")
			if name == "" || v.Field(i).IsZero() {
				continue // no default: README says what happens instead
			}
			doc, ok := documented[name]
			if !ok {
				t.Errorf("README has no default for %s", name)
				continue
			}
			var same bool
			switch val := v.Field(i).Interface().(type) {
			case time.Duration:
				d, err := time.ParseDuration(doc)
				same = err == nil && d == val
			case byteSize:
				n, err := parseByteSize(doc)
				same = err == nil && n == val.n
			default: // strings and numbers
				same = doc == fmt.Sprint(val)
			}
			if !same {
				t.Errorf("README says %s defaults to %q; the configuration takes %v", name, doc, v.Field(i))
			}
			checked++
		}
	}
	if checked < 30 {
		t.Errorf("checked %d defaults; README's table was not read?", checked)
	}
}

func TestParseDotenv(t *testing.T) {
	for _, tt := range []struct {
		name    string
		in      string
		want    map[string]string
		wantErr string
	}{
		{
			name: "what vercel env pull writes",
			in:   "# Created by Vercel CLI\nVERCEL_OIDC_TOKEN=\"eyJhbGciOi.J9.sig\"\nVERCEL_ENV=\"development\"\n",
			want: map[string]string{"VERCEL_OIDC_TOKEN": "eyJhbGciOi.J9.sig", "VERCEL_ENV": "development"},
		},
		{
			name: "bare, exported and commented",
			in:   "\n  export A=1\nB = two words  # a comment\nC=x#y\nD=\n",
			want: map[string]string{"A": "1", "B": "two words", "C": "x#y", "D": ""},
		},
		{
			name: "quotes and escapes",
			in:   `A="line\nnext \"q\" \\ \t."` + "\nB='lit $X \\n'\nC=\"# not a comment\" # comment\n",
			want: map[string]string{"A": "line\nnext \"q\" \\ \t.", "B": `lit $X \n`, "C": "# not a comment"},
		},
		{
			name: "a quoted value over lines",
			in:   "KEY=\"-----BEGIN\nabc\n-----END\"\nNEXT=1\n",
			want: map[string]string{"KEY": "-----BEGIN\nabc\n-----END", "NEXT": "1"},
		},
		{
			// godotenv would expand these, and make \t a t and lose a
			// last escaped quote: the values stay as they were written.
			name: "dollars and escapes stay literal",
			in:   "K1=abc$def\nK2=\"a${B}c\"\nB=2\nK3=$HOME\nK4='$X \\t'\nK5=\"a\\$b\"\nK6=a\\$b\\t\nK7=\"say \\\"hi\\\"\"\n",
			want: map[string]string{"K1": "abc$def", "K2": "a${B}c", "B": "2", "K3": "$HOME", "K4": `$X \t`, "K5": "a$b", "K6": `a\$b\t`, "K7": `say "hi"`},
		},
		{name: "no equals sign", in: "JUSTAWORD\n", wantErr: `unexpected character "\n" in variable name near "JUSTAWORD\n"`},
		{name: "unterminated", in: "A=\"open\nB=2\n", wantErr: "unterminated quoted value"},
		{name: "junk after quote", in: "A=\"x\" y\n", wantErr: "unexpected character"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseDotenv([]byte(tt.in))
			if failed(t, err, tt.wantErr) {
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestEnvLookuper: the environment wins over .env.local, which wins over
// .env; a variable set empty in the environment still wins.
func TestEnvLookuper(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(".env", "SP_TEST_A=from-env-file\nSP_TEST_B=from-env-file\nSP_TEST_C=from-env-file\nSP_TEST_D=from-env-file\n")
	write(".env.local", "SP_TEST_B=from-local\nSP_TEST_C=from-local\n")
	t.Setenv("SP_TEST_C", "from-environment")
	t.Setenv("SP_TEST_D", "")

	l, read, err := Lookup(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(read, []string{".env.local", ".env"}) {
		t.Errorf("read %q", read)
	}
	for key, want := range map[string]string{
		"SP_TEST_A": "from-env-file",
		"SP_TEST_B": "from-local",
		"SP_TEST_C": "from-environment",
		"SP_TEST_D": "",
	} {
		if got, ok := l.Lookup(key); !ok || got != want {
			t.Errorf("%s = %q, %v; want %q", key, got, ok, want)
		}
	}
	if _, ok := l.Lookup("SP_TEST_UNSET"); ok {
		t.Error("found an unset variable")
	}
	if v := os.Getenv("SP_TEST_A"); v != "" {
		t.Errorf("the process environment changed: SP_TEST_A=%q", v)
	}

	write(".env", "oops\n")
	if _, _, err := Lookup(dir); err == nil || !strings.HasPrefix(err.Error(), "config: .env: unexpected character") {
		t.Errorf("err = %v", err)
	}
	if _, read, err := Lookup(t.TempDir()); err != nil || len(read) != 0 {
		t.Errorf("empty dir: %q, %v", read, err)
	}
}
