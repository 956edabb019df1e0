package main

import (
	"bufio"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

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
		{name: "no equals sign", in: "JUSTAWORD\n", wantErr: "line 1: want KEY=value"},
		{name: "bad name", in: "A=1\n1X=2\n", wantErr: "line 2: want KEY=value"},
		{name: "unterminated", in: "A=\"open\nB=2\n", wantErr: "line 1: unterminated quoted value"},
		{name: "junk after quote", in: "A=\"x\" y\n", wantErr: "line 1: text after the closing quote"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseDotenv(bufio.NewScanner(strings.NewReader(tt.in)))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
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

	l, read, err := envLookuper(dir)
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
	if _, _, err := envLookuper(dir); err == nil || err.Error() != "config: .env: line 1: want KEY=value" {
		t.Errorf("err = %v", err)
	}
	if _, read, err := envLookuper(t.TempDir()); err != nil || len(read) != 0 {
		t.Errorf("empty dir: %q, %v", read, err)
	}
}
