package sandbox

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestLimitsOr(t *testing.T) {
	got := Limits{Timeout: time.Second}.Or(Limits{Timeout: time.Minute, Memory: 1 << 20})
	want := Limits{Timeout: time.Second, Memory: 1 << 20}.WithDefaults()
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if (Limits{}).Or(Limits{}) != (Limits{}).WithDefaults() {
		t.Error("zero limits do not take the defaults")
	}
}

func TestCheckFiles(t *testing.T) {
	ok := []File{{Name: "data.csv"}, {Name: "sub/dir/x.txt"}, {Name: ".hidden"}}
	if err := CheckFiles(ok, Limits{}); err != nil {
		t.Errorf("clean names refused: %v", err)
	}
	for _, name := range []string{"", ".", "..", "../x", "/etc/passwd", "a/../b", "a//b", "a/", "x\x00y", strings.Repeat("n", 1025)} {
		if err := CheckFiles([]File{{Name: name}}, Limits{}); err == nil {
			t.Errorf("name %q accepted", name)
		}
	}
	if err := CheckFiles([]File{{Name: "a"}, {Name: "a"}}, Limits{}); err == nil {
		t.Error("duplicate accepted")
	}
	if err := CheckFiles([]File{{Name: "a", Data: make([]byte, 11)}}, Limits{DiskSize: 10}); err == nil {
		t.Error("files over the disk limit accepted")
	}
	if err := CheckFiles(make([]File, DefaultInputFiles+1), Limits{}); err == nil {
		t.Error("too many files accepted")
	}
}

func TestCapBuffer(t *testing.T) {
	b := &CapBuffer{Max: 5}
	b.Write([]byte("abc"))
	b.Write([]byte("defg"))
	b.Write([]byte("h"))
	if string(b.Bytes()) != "abcde" || b.Size() != 8 || !b.Truncated() {
		t.Errorf("kept %q of %d, truncated %v", b.Bytes(), b.Size(), b.Truncated())
	}
	b = &CapBuffer{Max: 5}
	b.Write([]byte("abcde"))
	if b.Truncated() {
		t.Error("exactly Max bytes reported as truncated")
	}
}

func TestCheckRefusesNUL(t *testing.T) {
	req := Request{Code: "print('a')\x00import os"}
	if err := req.Check(Limits{}); err != ErrNULInCode {
		t.Errorf("code with a NUL byte: got %v, want ErrNULInCode", err)
	}
	req.Code = `print("\x00")` // an escape in a literal is fine
	if err := req.Check(Limits{}); err != nil {
		t.Errorf("escaped NUL refused: %v", err)
	}
}

func TestValidName(t *testing.T) {
	for name, want := range map[string]bool{
		"a": true, "a/b.csv": true, ".hidden": true, "...": true, "a/...b": true, "\x1b[2J": true,
		strings.Repeat("n", MaxPathLen): true, strings.Repeat("n", MaxPathLen+1): false,
		"": false, ".": false, "..": false, "../a": false, "a/..": false, "/a": false, "a/": false,
		"a//b": false, "a/./b": false, "a\x00b": false,
	} {
		if got := ValidName(name); got != want {
			t.Errorf("ValidName(%.20q) = %v, want %v", name, got, want)
		}
	}
}

func TestCutName(t *testing.T) {
	for _, tc := range []struct {
		in    string
		limit int
		want  string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"abcdefghijk", 10, "abcdefg…"},
		{"ab日本語", 8, "ab日…"},                         // 日 ends at 5; 本 would pass 5
		{"abcd日本", 8, "abcd…"},                       // back off to where 日 starts
		{strings.Repeat("\x80", 10), 8, "\x80\x80…"}, // not UTF-8: back off three bytes at most
		{strings.Repeat("é", 200), 255, strings.Repeat("é", 126) + "…"},
	} {
		got := CutName(tc.in, tc.limit)
		if got != tc.want || len(got) > tc.limit {
			t.Errorf("CutName(%q, %d) = %q, want %q", tc.in, tc.limit, got, tc.want)
		}
	}
}

func TestMoreOmitted(t *testing.T) {
	for _, tc := range []struct {
		n       int64
		partial bool
		want    string
	}{
		{0, false, "… and 0 more not listed"},
		{12345, false, "… and 12345 more not listed"},
		{12345, true, "… and 12345 more not listed, and others not looked at"},
		{0, true, "… and others not looked at"},
	} {
		s := MoreOmitted(tc.n, tc.partial)
		if s != tc.want {
			t.Errorf("MoreOmitted(%d, %v) = %q, want %q", tc.n, tc.partial, s, tc.want)
		}
		if m, p, ok := ParseMoreOmitted(s); !ok || m != tc.n || p != tc.partial {
			t.Errorf("ParseMoreOmitted(%q) = %d, %v, %v", s, m, p, ok)
		}
	}
	for _, s := range []string{"… and 12 more not listed (not a regular file)", "… and 012 more not listed",
		"… and -1 more not listed", "… and x more not listed", "… and 3", "x"} {
		if _, _, ok := ParseMoreOmitted(s); ok {
			t.Errorf("ParseMoreOmitted(%q) ok", s)
		}
	}
}

func TestBound(t *testing.T) {
	entries := func(n int, f string) []string {
		var l []string
		for i := range n {
			l = append(l, fmt.Sprintf(f, i))
		}
		return l
	}
	files := func(n int, size int) []File {
		var l []File
		for i := range n {
			l = append(l, File{Name: fmt.Sprintf("f%03d", i), Data: make([]byte, size)})
		}
		return l
	}
	long := strings.Repeat("x", 300)
	for _, tc := range []struct {
		name    string
		lim     Limits
		in      Result
		files   int      // files kept
		omitted []string // nil: in's list unchanged
		caps    []Cap
	}{
		{name: "within the caps", in: Result{Files: files(3, 10), FilesOmitted: []string{"fifo (not a regular file)"}, Stdout: []byte("hi")},
			files: 3},
		{name: "too many files", lim: Limits{Files: 2}, in: Result{Files: files(4, 1)},
			files: 2, omitted: []string{"f002 (too many files)", "f003 (too many files)"}},
		{name: "past the disk limit", lim: Limits{DiskSize: 25}, in: Result{Files: files(3, 10)},
			files: 2, omitted: []string{"f002 (too large)"}},
		{name: "bad names", in: Result{Files: []File{{Name: "../etc/passwd"}, {Name: "/abs"}, {Name: "ok"}}},
			files: 1, omitted: []string{"../etc/passwd (not a clean relative path)", "/abs (not a clean relative path)"}},
		{name: "path too long", in: Result{Files: []File{{Name: strings.Repeat("a/", 600) + "b"}}},
			omitted: []string{CutName(strings.Repeat("a/", 600)+"b", MaxOmittedName) + " (path too long)"}, caps: []Cap{CapResultList}},
		{name: "long names cut, why kept", in: Result{FilesOmitted: []string{long + " (not a regular file)", long, long + " (" + long + ")"}},
			omitted: []string{CutName(long, MaxOmittedName) + " (not a regular file)", CutName(long, MaxOmittedName), CutName(long+" ("+long+")", MaxOmittedName)},
			caps:    []Cap{CapResultList}},
		{name: "too many entries", in: Result{FilesOmitted: entries(250, "p%03d (not a regular file)")},
			omitted: append(entries(MaxOmitted, "p%03d (not a regular file)"), MoreOmitted(150, false)), caps: []Cap{CapResultList}},
		{name: "too many bytes", in: Result{FilesOmitted: entries(90, strings.Repeat("n", 250)+"%03d (not a regular file)")},
			omitted: append(entries(MaxOmittedBytes/274, strings.Repeat("n", 250)+"%03d (not a regular file)"), MoreOmitted(90-MaxOmittedBytes/274, false)),
			caps:    []Cap{CapResultList}},
		{name: "the backend's count is added to", in: Result{FilesOmitted: append(entries(MaxOmitted+1, "p%03d"), MoreOmitted(1000, true))},
			omitted: append(entries(MaxOmitted, "p%03d"), MoreOmitted(1001, true)), caps: []Cap{CapResultList}},
		{name: "the backend's count kept", in: Result{FilesOmitted: []string{"a (too deep)", MoreOmitted(7, false)}},
			caps: []Cap{CapResultList}},
		{name: "a file that looks like the count", in: Result{FilesOmitted: []string{MoreOmitted(7, false) + " (not a regular file)"}}},
		{name: "output", lim: Limits{Output: 4}, in: Result{Stdout: []byte("123456"), StdoutSize: 6, Stderr: []byte("1234")},
			caps: []Cap{CapOutput}},
		{name: "output cut before", in: Result{Stdout: []byte("1"), StdoutSize: 1 << 30, StdoutTruncated: true},
			caps: []Cap{CapOutput}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.in
			r.Files = slices.Clone(tc.in.Files)
			r.FilesOmitted = slices.Clone(tc.in.FilesOmitted)
			r.Bound(tc.lim)
			if len(r.Files) != tc.files {
				t.Errorf("%d files, want %d", len(r.Files), tc.files)
			}
			want := tc.omitted
			if want == nil {
				want = tc.in.FilesOmitted
			}
			if !slices.Equal(r.FilesOmitted, want) {
				t.Errorf("omitted\n%q\nwant\n%q", r.FilesOmitted, want)
			}
			if !slices.Equal(r.Caps, tc.caps) {
				t.Errorf("caps %q, want %q", r.Caps, tc.caps)
			}
			lim := tc.lim.WithDefaults()
			for _, b := range [][]byte{r.Stdout, r.Stderr} {
				if int64(len(b)) > lim.Output {
					t.Errorf("output of %d bytes", len(b))
				}
			}
			if int64(len(tc.in.Stdout)) > lim.Output && (!r.StdoutTruncated || r.StdoutSize != tc.in.StdoutSize) {
				t.Errorf("stdout truncated %v, size %d", r.StdoutTruncated, r.StdoutSize)
			}
			again := r
			again.Files = slices.Clone(r.Files)
			again.FilesOmitted = slices.Clone(r.FilesOmitted)
			again.Caps = slices.Clone(r.Caps)
			again.Bound(tc.lim)
			if !slices.Equal(again.FilesOmitted, r.FilesOmitted) || len(again.Files) != len(r.Files) || !slices.Equal(again.Caps, r.Caps) {
				t.Errorf("Bound is not idempotent:\n%q\n%q", r.FilesOmitted, again.FilesOmitted)
			}
		})
	}
}
