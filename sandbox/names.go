package sandbox

import (
	"fmt"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"
)

// SafeName turns a file name from outside (a Slack attachment, a command
// line) into a plain file name for [WorkDir]: its last path element, with
// no hidden or option-like prefix, no characters a shell or a Python string
// would trip on, and a bounded length. filetype names the file's type when
// the name has no extension ("csv", "text", "python", "markdown" …, as
// Slack names them); it may be empty.
func SafeName(name, filetype string) string {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	var b strings.Builder
	for _, r := range name {
		switch {
		case r == utf8.RuneError, unicode.IsControl(r):
			continue
		case unicode.IsLetter(r), unicode.IsDigit(r), strings.ContainsRune("._-+()@,=", r):
			b.WriteRune(r)
		default:
			b.WriteRune('_')
		}
	}
	s := b.String()
	for strings.Contains(s, "__") {
		s = strings.ReplaceAll(s, "__", "_")
	}
	s = strings.TrimRight(s, "._ ")
	// The extension first, so that a name of symbols ("📊.xlsx") keeps it.
	ext := path.Ext(s)
	if len(ext) > 16 || ext == s || ext == "." {
		ext = ""
	}
	base := strings.TrimLeft(strings.TrimSuffix(s, ext), "._-")
	base = strings.TrimRight(base, "._ ")
	if base == "" {
		base = "file"
	}
	if ext == "" {
		ext = filetypeExt(filetype)
	}
	const maxBase = 96
	if len(base) > maxBase {
		cut := maxBase
		for cut > 0 && !utf8.RuneStart(base[cut]) {
			cut--
		}
		base = base[:cut]
	}
	return base + ext
}

// filetypeExt maps a file type without a known extension (a snippet,
// pasted text) to an extension.
func filetypeExt(ft string) string {
	switch ft {
	case "text", "plain":
		return ".txt"
	case "markdown":
		return ".md"
	case "python":
		return ".py"
	case "csv", "tsv", "json", "xml", "yaml", "sql":
		return "." + ft
	}
	return ""
}

// UniqueName returns name, or name-2, name-3 … before its extension,
// whichever is not taken.
func UniqueName(name string, taken func(string) bool) string {
	if !taken(name) {
		return name
	}
	ext := path.Ext(name)
	base := strings.TrimSuffix(name, ext)
	for i := 2; ; i++ {
		if n := fmt.Sprintf("%s-%d%s", base, i, ext); !taken(n) {
			return n
		}
	}
}

// HiddenPath reports whether a path a program wrote is a cache or hidden
// file (.cache/…, __pycache__/…) nobody asked for: front ends do not
// deliver it.
func HiddenPath(name string) bool {
	for el := range strings.SplitSeq(name, "/") {
		if strings.HasPrefix(el, ".") || el == "__pycache__" {
			return true
		}
	}
	return false
}
