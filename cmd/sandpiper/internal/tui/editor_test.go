package tui

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/muesli/termenv"
)

func newTestEditor(hist ...string) *editor {
	e := newEditor(newTheme(termenv.Ascii, true), hist)
	e.setWidth(40)
	e.setMaxRows(5)
	return e
}

// rows returns the editor's view without styles and trailing spaces.
func rows(e *editor) []string {
	lines := strings.Split(strings.TrimRight(stripSGR(e.view()), "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return lines
}

func TestEditorGrows(t *testing.T) {
	e := newTestEditor()
	for _, k := range []tea.KeyMsg{
		{Type: tea.KeyRunes, Runes: []rune("one")},
		{Type: tea.KeyEnter, Alt: true},
		{Type: tea.KeyRunes, Runes: []rune("two")},
		{Type: tea.KeyCtrlJ},
		{Type: tea.KeyRunes, Runes: []rune("three")},
	} {
		e.update(k)
	}
	if got, want := strings.Join(rows(e), "|"), "❯ one|  two|  three"; got != want {
		t.Errorf("view %q, want %q", got, want)
	}
	if got := e.value(); got != "one\ntwo\nthree" {
		t.Errorf("value %q", got)
	}
}

// TestEditorPaste checks that a paste keeps its lines, as line feeds,
// and that a tall paste shows its end, where the cursor is.
func TestEditorPaste(t *testing.T) {
	e := newTestEditor()
	e.paste("a\r\nb\rc\n")
	if got := e.value(); got != "a\nb\nc\n" {
		t.Errorf("value %q, want a\\nb\\nc\\n", got)
	}
	e.reset()
	e.paste(strings.Repeat("row\n", 10) + "end")
	got := rows(e)
	if len(got) != 5 || got[4] != "  end" {
		t.Errorf("view %q, want 5 rows ending with the paste's end", got)
	}
}

func TestEditorHistory(t *testing.T) {
	e := newTestEditor("first", "second\nof two lines")
	e.update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("draft")})
	if !e.atTop() || !e.older() || e.value() != "second\nof two lines" {
		t.Fatalf("Up: %q", e.value())
	}
	// The cursor is at the end: Up moves within the entry first.
	if e.atTop() {
		t.Error("at the top on the entry's last line")
	}
	e.update(tea.KeyMsg{Type: tea.KeyUp})
	if !e.atTop() || !e.older() || e.value() != "first" {
		t.Fatalf("Up, Up: %q", e.value())
	}
	if e.older() {
		t.Error("walked past the oldest entry")
	}
	if !e.atBottom() || !e.newer() || !e.newer() || e.value() != "draft" {
		t.Errorf("Down, Down: %q, want the draft back", e.value())
	}
	if e.newer() {
		t.Error("walked past the draft")
	}
	e.remember("third")
	if !e.older() || e.value() != "third" {
		t.Errorf("after remember: %q", e.value())
	}
}

// TestEditorWrappedEdges checks that Up and Down walk the history only
// from the first and last rows of a wrapped line.
func TestEditorWrappedEdges(t *testing.T) {
	e := newTestEditor("old")
	e.setValue(strings.Repeat("word ", 20)) // wraps over several rows
	if e.atTop() {
		t.Error("at the top with the cursor on the last row")
	}
	if !e.atBottom() {
		t.Error("not at the bottom with the cursor on the last row")
	}
}
