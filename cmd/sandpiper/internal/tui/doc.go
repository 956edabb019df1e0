// Package tui is sandpiper's chat in a terminal: a multi-line editor with
// a history, answers streamed and rendered as Markdown, and a framed card
// for each Python run, built on Bubble Tea.
//
// The program runs inline, not in the alternate screen: what is finished
// (the questions, the cards, the answers) is printed above the live area
// and stays in the terminal's scrollback; the live area holds only the
// answer being written, the running card's spinner and the editor.
//
// The UI does not run the agent. A front end gives it an [Options.Ask]
// function, which it calls for each question on a goroutine of its own,
// with a context the user cancels with Ctrl+C or Esc and an
// [agent.Observer] that brings the run's events to the UI as messages.
//
// Nothing the model or a program wrote reaches the terminal as it is: it
// goes through [safetext] first, and the Markdown renderer's output keeps
// only its own colour sequences.
//
// # What it looks like
//
// A captured screen (88 columns, as text, so without its colours; the
// model's replies were scripted for the capture, the run is real):
//
//	Sandpiper · gpt-4.1-mini · Python 3.11.2 with numpy 1.24.2, pandas 1.5.3, scipy 1.10.1,…
//
//	❯ What are the mean and the standard deviation of 3, 5, 8, 13 and 21?
//
//	  I'll compute both.
//
//	╭─ Python ─────────────────────────────────────────────────────────────────────────────╮
//	│ import statistics as st                                                              │
//	│ xs = [3, 5, 8, 13, 21]                                                               │
//	│ print(st.mean(xs), round(st.stdev(xs), 2))                                           │
//	├─ ✓ exit 0 · 815ms ───────────────────────────────────────────────────────────────────┤
//	│ 10 7.21                                                                              │
//	╰──────────────────────────────────────────────────────────────────────────────────────╯
//
//	  The mean is 10 and the sample standard deviation is about 7.21.
//
//	   statistic                               │ value
//	  ─────────────────────────────────────────┼────────────────────────────────────────
//	   mean                                    │ 10
//	   standard deviation                      │ 7.21
//
//	  2 steps · 2,702 tokens in, 113 out · 1.4s · gpt-4.1-mini
//
//	❯ Ask about numbers or data · /help
//	enter send · alt+enter new line · ↑ history · ctrl+d leave · /help
//
// Each run is a framed card: the Python highlighted, a spinner with the
// elapsed time while it runs, then the exit status, duration, output and
// the files saved. The answer is streamed in and rendered as Markdown at
// the terminal's width. What is finished stays in the scrollback; only the
// answer being written, the running card and the editor are redrawn, and
// they re-flow when the window is resized. One question (sandpiper ask
// "…") is shown the same way, without the editor, and the command exits
// when it is answered.
//
// # Keys and history
//
// The editor (editor.go) takes Enter to send, Alt+Enter or Ctrl+J for a new
// line, bracketed paste as one question however many lines, the readline
// movement and deletion keys, and ↑ ↓ to walk the [History] from the first
// or last line. Ctrl+C or Esc while an answer comes cancels its context:
// the run is killed (its sandbox destroyed), the prompt comes back, and the
// conversation goes on from the last answer. Ctrl+C clears text in the
// editor; Ctrl+C or Ctrl+D at an empty prompt leaves with exit status 0
// (so do /exit, exit and quit); Ctrl+Z suspends.
//
// The questions are kept in $XDG_STATE_HOME/sandpiper/history
// (~/.local/state/sandpiper/history without it): the newest
// [DefaultHistorySize], one JSON string a line so that a question of many
// lines stays one, mode 0600 in a directory of mode 0700; a question over
// 64 KiB is kept for the session only.
//
// NO_COLOR (set and not empty) turns colour off: the chat keeps bold, dim
// and its frames.
package tui
