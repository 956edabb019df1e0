package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// hostileProgram prints terminal escape sequences (an OSC 52 clipboard
// write, a screen clear, BEL), an 8-bit CSI as a raw byte and as U+009B,
// a carriage return and a bidi override, writes files named with them,
// and fails with them in its error. Its code holds a real ESC and a bidi
// override in a comment, as a model led by a file's content might write.
const hostileProgram = "import sys  # \x1b[2J\u202e\n" + `hostile = '\x1b]52;c;cm0gLXJmIC8=\x07\x1b[2J\x9b\u202e'
print('osc52', hostile, 'done')
sys.stdout.flush()
sys.stdout.buffer.write(b'raw c1 \x9b31m\rover\n')
sys.stdout.flush()
open('evil\u202egnp.exe', 'w').write('MZ')
open('notes\x07\x1b[2J.csv', 'w').write('a,b\n')
sys.stderr.write('Traceback (most recent call last):\nValueError: ' + hostile + '\n')
sys.exit(1)`

// TestAskNeutralisesSandboxText: nothing the program prints or names, nor
// what a model led by it answers, reaches the terminal with an escape
// sequence, a BEL, a C1 control or a bidi control, on stdout or stderr
// (with --debug, whose log lines quote the code and the output); the
// files are saved under the names the card shows.
func TestAskNeutralisesSandboxText(t *testing.T) {
	requireSandbox(t)
	f := newFakeModel(t, hostileProgram)
	f.say = "\n\x1b]8;;https://evil.example\x07click\x1b]8;;\x07 \u202etxt.exe \u009b31m \x1b[2K\r\n"
	askEnv(t, f, "openai")
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"ask", "--debug", "--out", "results", "run the hostile program"}, strings.NewReader(""), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%q\nstderr:\n%q", code, &stdout, &stderr)
	}
	for name, s := range map[string]string{"stdout": stdout.String(), "stderr": stderr.String()} {
		if r, i := unsafeRune(s); r >= 0 {
			t.Errorf("%s holds %U at %d: %q", name, r, i, s[max(i-60, 0):min(i+60, len(s))])
		}
	}
	out := stdout.String()
	for _, want := range []string{
		"  import sys  # ␛[2J\ufffd\n",                         // the code
		"  osc52 ␛]52;c;cm0gLXJmIC8=␇␛[2J\ufffd\ufffd done\n",  // the output
		"  raw c1 \ufffd31m\n  over\n",                         // a raw 8-bit CSI; CR ends a line
		"  ValueError: ␛]52;c;cm0gLXJmIC8=␇␛[2J\ufffd\ufffd\n", // the error
		"  saved results/evil\ufffdgnp.exe (2 bytes)\n",        // the files
		"  saved results/notes␇␛[2J.csv (4 bytes)\n",
		"␛]8;;https://evil.example␇click␛]8;;␇ \ufffdtxt.exe \ufffd31m ␛[2K\n", // the answer
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	for name, data := range map[string]string{"evil\ufffdgnp.exe": "MZ", "notes␇␛[2J.csv": "a,b\n"} {
		if got, err := os.ReadFile(filepath.Join("results", name)); err != nil || string(got) != data {
			t.Errorf("saved %s = %q, %v; want %q", name, got, err, data)
		}
	}
	if entries, _ := os.ReadDir("results"); len(entries) != 2 {
		t.Errorf("results holds %d files, want 2", len(entries))
	}
}

// unsafeRune returns the first rune of s a terminal must not be given raw,
// and its index, or -1: C0 controls but line feed and tab (ESC, BEL, CR
// …), DEL, C1 controls, bidi embeddings, overrides and isolates, and
// invalid UTF-8.
func unsafeRune(s string) (rune, int) {
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\ufffd"):
			return r, i
		case r < 0x20 && r != '\n' && r != '\t', r == 0x7f, r >= 0x80 && r <= 0x9f,
			r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return r, i
		}
	}
	return -1, -1
}
