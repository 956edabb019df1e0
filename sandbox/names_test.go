package sandbox

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestSafeName(t *testing.T) {
	for _, tt := range []struct{ in, filetype, want string }{
		{"sales.csv", "csv", "sales.csv"},
		{"../../etc/passwd", "text", "passwd.txt"},
		{`..\..\windows\win.ini`, "", "win.ini"},
		{"/abs/path/data.json", "json", "data.json"},
		{".bashrc", "", "bashrc"},
		{"...", "", "file"},
		{"", "csv", "file.csv"},
		{".csv", "csv", "csv.csv"},
		{"Q3 report (final).xlsx", "xlsx", "Q3_report_(final).xlsx"},
		{"a\x00b\nc.csv", "csv", "abc.csv"},
		{"-rf.txt", "text", "rf.txt"},
		{"données été.csv", "csv", "données_été.csv"},
		{"x$(rm -rf ~)`y`.py", "python", "x_(rm_-rf_)_y.py"},
		{"Untitled", "python", "Untitled.py"},
		{"📊.xlsx", "xlsx", "file.xlsx"},
		{"€.csv", "csv", "file.csv"},
		{"a.", "text", "a.txt"},
		{strings.Repeat("a", 300) + ".csv", "csv", strings.Repeat("a", 96) + ".csv"},
	} {
		if got := SafeName(tt.in, tt.filetype); got != tt.want {
			t.Errorf("SafeName(%q, %q) = %q, want %q", tt.in, tt.filetype, got, tt.want)
		}
		if got := SafeName(tt.in, tt.filetype); !filepath.IsLocal(got) || strings.ContainsAny(got, `/\`) || strings.HasPrefix(got, ".") {
			t.Errorf("SafeName(%q) = %q is not a plain local name", tt.in, got)
		}
	}
}

func FuzzSafeName(f *testing.F) {
	f.Add("../../etc/passwd", "text")
	f.Add("a/b\\c..d", "")
	f.Fuzz(func(t *testing.T, name, ft string) {
		got := SafeName(name, ft)
		if got == "" || !filepath.IsLocal(got) || strings.ContainsAny(got, "/\\\x00") || strings.HasPrefix(got, ".") || strings.HasPrefix(got, "-") || len(got) > 120 {
			t.Errorf("SafeName(%q, %q) = %q", name, ft, got)
		}
	})
}

func TestUniqueName(t *testing.T) {
	taken := map[string]bool{"a.csv": true, "a-2.csv": true}
	if got := UniqueName("a.csv", func(n string) bool { return taken[n] }); got != "a-3.csv" {
		t.Errorf("got %s", got)
	}
	if got := UniqueName("b.csv", func(n string) bool { return taken[n] }); got != "b.csv" {
		t.Errorf("got %s", got)
	}
}

func TestHiddenPath(t *testing.T) {
	for name, want := range map[string]bool{
		"chart.png": false, "out/a.csv": false, ".env": true, "out/.cache/x": true,
		"__pycache__/m.pyc": true, "a/__pycache__/m.pyc": true, "a.b/c": false,
	} {
		if got := HiddenPath(name); got != want {
			t.Errorf("HiddenPath(%q) = %v, want %v", name, got, want)
		}
	}
}
