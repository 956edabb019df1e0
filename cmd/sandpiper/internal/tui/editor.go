package tui

import (
	"strings"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textarea"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
)

// Editor limits.
const (
	promptWidth   = 2
	minEditorRows = 3 // the editor may always grow to this many rows
	// maxEditorLines is the most lines the editor holds (bubbles'
	// textarea drops the rest of a paste).
	maxEditorLines = 10000
)

// editor is the multi-line input: a textarea that grows with its text,
// with the history on Up and Down at its first and last rows.
type editor struct {
	ta      textarea.Model
	maxRows int

	hist    []string // oldest first
	histIdx int      // len(hist) when not walking the history
	draft   string   // the text before the walk began
}

func newEditor(t theme, hist []string) *editor {
	ta := textarea.New()
	ta.ShowLineNumbers = false
	ta.Prompt = ""
	ta.SetPromptFunc(promptWidth, func(line int) string {
		if line == 0 {
			return t.promptStyle.Render("❯") + " "
		}
		return "  "
	})
	ta.Placeholder = "Ask about numbers or data · /help"
	ta.CharLimit = 0
	ta.MaxHeight = 0
	ta.MaxWidth = 0
	ta.EndOfBufferCharacter = ' '

	km := textarea.DefaultKeyMap
	// Enter sends (the model handles it); these insert a line break.
	km.InsertNewline = key.NewBinding(key.WithKeys("alt+enter", "ctrl+j"))
	// Many terminals send Ctrl+arrows for word jumps.
	km.WordForward = key.NewBinding(key.WithKeys("alt+right", "ctrl+right", "alt+f"))
	km.WordBackward = key.NewBinding(key.WithKeys("alt+left", "ctrl+left", "alt+b"))
	// Ctrl+V would read the clipboard through xclip; terminals paste.
	km.Paste = key.NewBinding(key.WithDisabled())
	ta.KeyMap = km

	style := textarea.Style{
		Base:             t.plain,
		CursorLine:       t.plain,
		CursorLineNumber: t.plain,
		EndOfBuffer:      t.plain,
		LineNumber:       t.plain,
		Placeholder:      t.placeholder,
		Prompt:           t.plain,
		Text:             t.plain,
	}
	ta.FocusedStyle, ta.BlurredStyle = style, style
	ta.Cursor.Style = t.cursor
	ta.Cursor.TextStyle = t.plain
	ta.Cursor.SetMode(cursor.CursorStatic) // a blinking cursor redraws twice a second, for nothing
	ta.Focus()

	e := &editor{ta: ta, maxRows: 10, hist: hist, histIdx: len(hist)}
	e.setWidth(80)
	return e
}

// setWidth re-flows the editor to width columns.
func (e *editor) setWidth(width int) {
	e.ta.SetWidth(max(width, promptWidth+10))
	e.fit()
}

// setMaxRows bounds the editor's height; a longer text scrolls.
func (e *editor) setMaxRows(n int) {
	e.maxRows = max(n, minEditorRows)
	e.fit()
}

// fit sets the editor's height to its text's, within maxRows. When the
// text may not fit, it scrolls the text to the cursor, which the textarea
// does only on its next update, with the lines of its last view.
func (e *editor) fit() {
	rows := e.maxRows
	if e.ta.LineCount() < e.maxRows {
		rows = 0
		w := max(e.ta.Width(), 1)
		for _, l := range strings.Split(e.ta.Value(), "\n") {
			// The textarea wraps at words: count a row more for a line
			// that fills a row, and let it scroll when that is not enough.
			rows += lipgloss.Width(l)/w + 1
		}
	}
	e.ta.SetHeight(min(max(rows, 1), e.maxRows))
	if rows >= e.maxRows {
		_ = e.ta.View()
		e.ta, _ = e.ta.Update(nil)
	}
}

func (e *editor) value() string { return e.ta.Value() }

func (e *editor) empty() bool { return e.ta.Value() == "" }

// reset empties the editor and ends a walk through the history.
func (e *editor) reset() {
	e.ta.Reset()
	e.histIdx, e.draft = len(e.hist), ""
	e.fit()
}

// setValue replaces the text, with the cursor at its end.
func (e *editor) setValue(s string) {
	e.ta.SetHeight(e.maxRows)
	e.ta.SetValue(s)
	e.fit()
}

// remember adds an entry to the history the editor walks.
func (e *editor) remember(s string) {
	if n := len(e.hist); n == 0 || e.hist[n-1] != s {
		e.hist = append(e.hist, s)
	}
	e.histIdx, e.draft = len(e.hist), ""
}

// atTop reports whether the cursor is on the editor's first row.
func (e *editor) atTop() bool { return e.ta.Line() == 0 && e.ta.LineInfo().RowOffset == 0 }

// atBottom reports whether the cursor is on the editor's last row.
func (e *editor) atBottom() bool {
	li := e.ta.LineInfo()
	return e.ta.Line() == e.ta.LineCount()-1 && li.RowOffset >= li.Height-1
}

// older shows the previous entry of the history; it reports whether
// there was one.
func (e *editor) older() bool {
	if e.histIdx == 0 {
		return false
	}
	if e.histIdx == len(e.hist) {
		e.draft = e.ta.Value()
	}
	e.histIdx--
	e.setValue(e.hist[e.histIdx])
	return true
}

// newer shows the next entry of the history, or the draft after the
// newest; it reports whether the walk moved.
func (e *editor) newer() bool {
	if e.histIdx >= len(e.hist) {
		return false
	}
	e.histIdx++
	if e.histIdx == len(e.hist) {
		e.setValue(e.draft)
		e.draft = ""
	} else {
		e.setValue(e.hist[e.histIdx])
	}
	return true
}

// paste inserts pasted text as it is, line breaks included: a paste is
// never sent. It reports whether the editor had to leave lines out.
func (e *editor) paste(s string) (cut bool) {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	cut = e.ta.LineCount()+strings.Count(s, "\n") > maxEditorLines
	e.ta.SetHeight(e.maxRows)
	e.ta.InsertString(s)
	e.fit()
	return cut
}

// update passes a message to the textarea. The textarea scrolls its text
// to the cursor for its height at the time: it is given all the rows it
// may take first, so that it does not scroll text that then fits.
func (e *editor) update(msg tea.Msg) tea.Cmd {
	var cmd tea.Cmd
	e.ta.SetHeight(e.maxRows)
	e.ta, cmd = e.ta.Update(msg)
	e.fit()
	return cmd
}

func (e *editor) view() string { return e.ta.View() }
