// Package chat is sandpiper's terminal front end, beside the Slack one
// (package bot): it shows the agent's runs as they happen (the streamed
// answer, a card per Python run, a spinner while the model or the sandbox
// works) as plain text on an io.Writer, and keeps a conversation going a
// line at a time. Nothing in it is Slack's.
//
// # Plain mode
//
// sandpiper ask uses this package, not the terminal chat (package tui),
// when standard input or output is not a terminal (a pipe, CI,
// sandpiper ask "…" > answer.txt), with --plain, or with TERM=dumb: the
// cards as plain lines (a title, the lines indented under it, no frames),
// the answer as the model wrote it, and without a question a
// line-by-line chat (Enter sends; Ctrl+D leaves). NO_COLOR (set and not
// empty) turns colour off.
package chat
