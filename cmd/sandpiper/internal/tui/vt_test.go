package tui

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	xansi "github.com/charmbracelet/x/ansi"
)

// screen is a small terminal emulator for tests: it plays what a program
// wrote and returns the text the terminal then holds, scrollback
// included. It knows what Bubble Tea's inline renderer writes (text,
// CR, LF, cursor up and down, erasing) and ignores colours and modes, so
// the result does not depend on how updates were grouped into frames.
func screen(tb testing.TB, out []byte, width int) string {
	tb.Helper()
	var lines [][]rune
	row, col := 0, 0
	pending := false // the cursor is past the last column (autowrap pending)
	ensure := func() {
		for len(lines) <= row {
			lines = append(lines, nil)
		}
	}
	put := func(r rune) {
		w := xansi.StringWidth(string(r))
		if w == 0 {
			return
		}
		if pending || col+w > width {
			row, col, pending = row+1, 0, false
		}
		ensure()
		for len(lines[row]) < col+w {
			lines[row] = append(lines[row], ' ')
		}
		lines[row][col] = r
		for i := 1; i < w; i++ {
			lines[row][col+i] = 0 // the right half of a wide character
		}
		col += w
		if col == width {
			col, pending = width-1, true
		}
	}
	s := string(out)
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == '\r':
			col, pending = 0, false
			i++
		case c == '\n':
			row, pending = row+1, false
			i++
		case c == '\x1b' && i+1 < len(s) && s[i+1] == '[':
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			if j == len(s) {
				tb.Fatalf("screen: unfinished CSI %q", s[i:])
			}
			params, final := s[i+2:j], s[j]
			n := 1
			if v, err := strconv.Atoi(params); err == nil && v > 0 {
				n = v
			}
			ensure()
			switch {
			case final == 'A':
				row, pending = max(row-n, 0), false
			case final == 'B':
				row, pending = row+n, false
			case final == 'K' && (params == "" || params == "0"):
				if col < len(lines[row]) {
					lines[row] = lines[row][:col]
				}
			case final == 'K' && params == "2":
				lines[row] = nil
			case final == 'J' && (params == "" || params == "0"):
				if col < len(lines[row]) {
					lines[row] = lines[row][:col]
				}
				lines = lines[:row+1]
			case final == 'm', final == 'h' && strings.HasPrefix(params, "?"), final == 'l' && strings.HasPrefix(params, "?"):
				// colours and modes
			default:
				tb.Fatalf("screen: unknown sequence %q", s[i:j+1])
			}
			i = j + 1
		case c == '\x1b' && i+1 < len(s) && s[i+1] == ']':
			end := strings.IndexAny(s[i:], "\a\x1b\\")
			tb.Errorf("screen: OSC sequence %q", s[i:i+max(end, 0)+1])
			i += max(end, 1)
		case c < 0x20 || c == 0x7f:
			tb.Fatalf("screen: control character %q at %d", c, i)
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			put(r)
			i += n
		}
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(strings.TrimRight(strings.ReplaceAll(string(l), "\x00", ""), " "))
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

func TestScreen(t *testing.T) {
	for _, test := range []struct {
		name, out, want string
	}{
		{"text", "ab\r\ncd", "ab\ncd\n"},
		{"overwrite", "abc\rX", "Xbc\n"},
		{"up and erase", "one\r\ntwo\x1b[1A\rONE\x1b[K\r\n", "ONE\ntwo\n"},
		{"erase below", "a\r\nb\r\nc\x1b[2A\r\x1b[J", "\n"},
		{"colours", "\x1b[1;31mred\x1b[0m", "red\n"},
		{"wrap", "abcdef", "abcd\nef\n"},
		{"exact width", "abcd\r\nef", "abcd\nef\n"},
		{"wide", "日本語", "日本\n語\n"},
	} {
		t.Run(test.name, func(t *testing.T) {
			if got := screen(t, []byte(test.out), 4); got != test.want {
				t.Errorf("screen(%q) = %q, want %q", test.out, got, test.want)
			}
		})
	}
}
