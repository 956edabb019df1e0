// Package agent answers questions with a tool loop: the model reads the
// conversation, may call tools (chiefly executeCode, which runs Python in a
// fresh sandbox), reads their results, and goes on until it answers without
// calling a tool or the step limit stops it.
//
// The loop is model-agnostic: it talks to a [Model], which the subpackages
// openai (OpenAI-compatible chat completions, including the Vercel AI
// Gateway) and anthropic (the Messages API) implement. Whoever shows a run
// (the terminal, Slack) watches it through an [Observer], and gives it the
// conversation's working directory, a [Workspace], which every
// executeCode run starts with and adds its files to.
//
// With [ExecuteCodeOptions.KeepState], the Workspace also keeps the
// conversation's Python state (see package sandbox): each run starts from
// the state the last one saved and replaces it with its own, so a later
// call uses a DataFrame an earlier one loaded. The tool's description says
// so, and its result's "state" field lists the names restored, kept and
// dropped (with why), within its budget, and says in a note when nothing
// was saved, when a state was set aside (unreadable, its restore stopped
// the run, or over Limits.StateSize: [ErrStateUnusable]), or when the
// conversation keeps none ([ErrNoState]). The system prompt defers to the
// tool's description, which says no variables are kept in a conversation
// that keeps none ([StateSwitch]). A Workspace that streams its state
// ([StateStreamer]) hands it to the sandbox without the tool holding it.
//
// # File previews
//
// Before a question reaches the model, every file in the working directory
// is described: its path, kind and size, and a short preview (a CSV's
// header and first lines with the encoding= Python needs, also for CSVs in
// Windows-1252, Latin-1 or UTF-16; a workbook's sheet names and the first
// rows of its first sheet; an image's size). Previews are made in the
// bot's own process, in Go, not in a sandbox: a sandbox run would cost a
// slot and about 0.8 s of pandas import per file, where a bounded Go
// preview takes micro- to milliseconds. Every preview is bounded whatever
// the file holds:
//
//   - Text: only the first ~6 KB is decoded; the line count is an
//     allocation-free bytes.Count.
//   - Images: at most 1 MiB of header is read.
//   - Workbooks: at most 1 MiB of zip directory is decoded. Parts are read
//     as streams of at most 1 MiB (sheet list and relationships), 2 MiB
//     (first sheet) and 4 MiB (shared strings) decompressed, and never past
//     the size a part declares. Parts declaring more than 1 GiB, or more
//     than deflate can compress to, are refused. Reading stops at 64 levels
//     of nesting, 16 KiB tags and 150,000 XML tokens and attributes. Only
//     the shared strings the first rows need are kept, each cut to 240
//     characters, with 64 cells a row.
//
// The worst file we could build allocates 36 MB in all and takes about
// 0.15 s (go test -run '^$' -bench BenchmarkPreviewWorst -benchtime 5x
// ./agent/). At most two previews run at once in the process; a file waits
// its turn (10 s at most) or goes without a preview. A preview that stops
// at a budget says so to the model and is counted as the preview cap.
// Names, sources, notes, sheet names and cells pass through safetext.Line.
// The executeCode result the model reads is at most 32 KiB of JSON, and a
// cut field says what was left out; the program's output and stderr in it
// are neutralised as the terminal and Slack show them (safetext.Text:
// escape sequences, controls and bidi overrides become visible
// stand-ins).
//
// CI (.ci/run) fuzzes the previewers (FuzzPreview*) and the tool result
// (FuzzToolResult) briefly, each with its seed corpus in testdata/fuzz/.
package agent
