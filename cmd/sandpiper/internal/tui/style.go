package tui

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// theme holds the styles of everything the UI draws itself. Colours are
// the terminal's 16 ANSI colours, so that they follow its palette; with
// no colour (NO_COLOR), attributes such as bold, faint and reverse (the
// editor's cursor) still show.
type theme struct {
	profile termenv.Profile // for colours: Ascii means none
	dark    bool

	r                                  *lipgloss.Renderer
	plain, dim, bold                   lipgloss.Style
	red, green, yellow, accent, border lipgloss.Style
	cursor, placeholder, promptStyle   lipgloss.Style
}

func newTheme(profile termenv.Profile, dark bool) theme {
	r := lipgloss.NewRenderer(io.Discard)
	// Attributes need a profile above Ascii; colours are left out below
	// when the profile is Ascii.
	rp := profile
	if rp == termenv.Ascii {
		rp = termenv.ANSI
	}
	r.SetColorProfile(rp)
	r.SetHasDarkBackground(dark)
	t := theme{profile: profile, dark: dark, r: r}
	color := func(s lipgloss.Style, c string) lipgloss.Style {
		if profile == termenv.Ascii {
			return s
		}
		return s.Foreground(lipgloss.Color(c))
	}
	t.plain = r.NewStyle()
	t.dim = r.NewStyle().Faint(true)
	t.bold = r.NewStyle().Bold(true)
	t.red = color(r.NewStyle(), "1")
	t.green = color(r.NewStyle(), "2")
	t.yellow = color(r.NewStyle(), "3")
	t.accent = color(r.NewStyle(), "6")
	t.border = color(r.NewStyle(), "8")
	if profile == termenv.Ascii {
		t.border = t.dim
	}
	t.cursor = r.NewStyle().Reverse(true)
	t.placeholder = t.dim
	t.promptStyle = color(r.NewStyle().Bold(true), "6")
	return t
}

// Detect returns the colour profile of the terminal out, for
// Options.Profile (termenv.Ascii when NO_COLOR is set), and whether its
// background is dark, for Options.Dark: from COLORFGBG when it is set,
// else by asking the terminal (which most answer at once, and all bound by
// their answer to a cursor-position query), so call it before a program
// reads the terminal's input. For os.Stdout, the answer Bubble Tea's
// package initialisation got (it asks, in v1) is used. getenv is
// os.Getenv, or a test's.
func Detect(out io.Writer, getenv func(string) string) (profile termenv.Profile, dark bool) {
	o := termenv.NewOutput(out, termenv.WithEnvironment(environ(getenv)))
	profile = o.EnvColorProfile()
	if fgbg := getenv("COLORFGBG"); fgbg != "" {
		// "15;0": light text on a dark background; the last field is
		// the background's ANSI colour.
		bg := fgbg[strings.LastIndexByte(fgbg, ';')+1:]
		return profile, bg != "7" && bg != "15" && bg != "default"
	}
	if out == os.Stdout {
		return profile, lipgloss.HasDarkBackground()
	}
	return profile, o.HasDarkBackground()
}

// environ is termenv's view of the environment, through getenv.
type environ func(string) string

func (e environ) Environ() []string        { return nil }
func (e environ) Getenv(key string) string { return e(key) }

// formatDuration is d for people: 41ms, 1.2s, 1m05s.
func formatDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	d = d.Round(time.Second)
	return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
}
