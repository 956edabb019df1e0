package slacktest

import (
	"strings"
	"unicode/utf8"
)

// UnsafeRune returns the first rune of s that Slack must not be given
// raw, and its index, or -1: C0 controls but line feed and tab, DEL, C1
// controls, bidi embeddings, overrides and isolates, invalid UTF-8.
func UnsafeRune(s string) (rune, int) {
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

// JSONStrings returns the strings in a decoded JSON value, keys included.
func JSONStrings(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			out = append(out, JSONStrings(e)...)
		}
		return out
	case map[string]any:
		var out []string
		for k, e := range v {
			out = append(out, k)
			out = append(out, JSONStrings(e)...)
		}
		return out
	}
	return nil
}
