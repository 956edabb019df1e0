package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/sandpiper-bot/sandpiper/sandbox"
	"github.com/sandpiper-bot/sandpiper/sandbox/safetext"
)

// MaxToolResult bounds the executeCode result the model reads: bytes of
// JSON, whatever the sandbox returns. A result cut to fit says what was
// cut in its "cut" field.
const MaxToolResult = 32 << 10

// Budgets within MaxToolResult, in bytes of JSON.
const (
	resultNameChars    = 256     // characters of a file name or note (a sandbox name has at most 255 bytes)
	resultFilesBytes   = 4 << 10 // the list of files written
	resultOmittedBytes = 2 << 10 // the list of files left out
	resultFixedBytes   = 768     // the other fields, the notes on limits, and the "cut" note
	clipNoteBytes      = 48      // the note clip leaves between head and tail
)

// codeResult is the JSON the model reads. The field names match the
// reference tool's (output, exitCode, stderr).
type codeResult struct {
	Output    string `json:"output"`
	Stderr    string `json:"stderr"`
	ExitCode  int    `json:"exitCode"`
	TimedOut  bool   `json:"timedOut,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
	// Files are the files the program wrote in the working directory;
	// FilesOmitted those the sandbox did not return, with why.
	Files        []string `json:"files,omitempty"`
	FilesOmitted []string `json:"filesOmitted,omitempty"`
	// State says what became of the conversation's Python state: the
	// names the run started with, those kept for the next run, those
	// that could not be, with why.
	State *stateJSON `json:"state,omitempty"`
	// Cut says what was left out to keep the result within
	// MaxToolResult.
	Cut string `json:"cut,omitempty"`
}

// encodeResult returns the JSON the model reads for res, within
// MaxToolResult: stdout and stderr within MaxModelOutput, kept head and
// tail, the lists of files within their budgets, stdout, stderr and every
// name made safe to show ([safetext]), as the terminal and Slack show
// them. omitted are notes on files left out besides the sandbox's; st the
// notes on the state. When anything was cut it adds
// [sandbox.CapToolResult] to res.Caps.
func (t *ExecuteCode) encodeResult(res *sandbox.Result, omitted []string, st stateNotes) string {
	// The budgets hold by construction; halving them is a last guard.
	for scale := 1; ; scale *= 2 {
		r, cut := t.result(res, omitted, st, scale)
		content, err := json.Marshal(r)
		if err == nil && len(content) <= MaxToolResult {
			if cut {
				res.AddCap(sandbox.CapToolResult)
			}
			return string(content)
		}
		if scale > MaxToolResult {
			res.AddCap(sandbox.CapToolResult)
			return `{"output":"","stderr":"[the result could not be shown]","exitCode":` + fmt.Sprint(res.ExitCode) + `,"cut":"everything"}`
		}
	}
}

// result builds the model's view of res with every budget divided by
// scale, and reports whether it cut anything.
func (t *ExecuteCode) result(res *sandbox.Result, omitted []string, st stateNotes, scale int) (codeResult, bool) {
	v := res.Verdict()
	r := codeResult{ExitCode: res.ExitCode, TimedOut: v.Kind == sandbox.VerdictTimeout}
	var cuts []string

	var names []string
	for _, f := range res.Files {
		names = append(names, f.Name)
	}
	var short1, short2 bool
	var n int
	r.Files, n, short1 = nameList(names, resultFilesBytes/scale)
	if n < len(names) {
		cuts = append(cuts, fmt.Sprintf("files lists %d of %s names", n, commas(len(names))))
	}
	all := append(res.FilesOmitted[:len(res.FilesOmitted):len(res.FilesOmitted)], omitted...)
	r.FilesOmitted, n, short2 = nameList(all, resultOmittedBytes/scale)
	if n < len(all) {
		cuts = append(cuts, fmt.Sprintf("filesOmitted lists %d of %s entries", n, commas(len(all))))
	}
	if short1 || short2 {
		cuts = append(cuts, fmt.Sprintf("names longer than %d characters shortened", resultNameChars))
	}
	var stateCut bool
	if r.State, stateCut = stateResult(res, st, scale); stateCut {
		cuts = append(cuts, "state lists some names, then how many more")
	}

	// The notes the streams end with.
	var outNote, errNote string
	if res.StdoutTruncated {
		outNote = fmt.Sprintf("\n[output cut: the program printed %s, more than the %s kept]", sandbox.FormatSize(res.StdoutSize), sandbox.FormatSize(t.limits.Output))
	}
	if res.StderrTruncated {
		errNote = fmt.Sprintf("\n[stderr cut: the program wrote %s, more than the %s kept]", sandbox.FormatSize(res.StderrSize), sandbox.FormatSize(t.limits.Output))
	}
	if note := limitNote(v); note != "" {
		if len(res.Stderr) > 0 && !bytes.HasSuffix(res.Stderr, []byte("\n")) || errNote != "" {
			errNote += "\n"
		}
		errNote += note
	}

	// What is left goes to stdout and stderr, each within MaxModelOutput;
	// one that needs less than half leaves the rest to the other.
	room := (MaxToolResult-resultFixedBytes)/scale - listCost(r.Files) - listCost(r.FilesOmitted) - stateCost(r.State) -
		jsonCost(outNote) - jsonCost(errNote)
	room = max(room, 0)
	limit := MaxModelOutput / scale
	outNeed := min(costUpTo(res.Stdout, limit+1), limit)
	errNeed := min(costUpTo(res.Stderr, limit+1), limit)
	errRoom := min(errNeed, room/2)
	outRoom := min(outNeed, room-errRoom)
	errRoom = min(errNeed, room-outRoom)

	var cutOut, cutErr bool
	r.Output, cutOut = clip(res.Stdout, outRoom)
	r.Stderr, cutErr = clip(res.Stderr, errRoom)
	if cutOut {
		cuts = append(cuts, fmt.Sprintf("output shows the head and tail of %s", sandbox.FormatSize(int64(len(res.Stdout)))))
	}
	if cutErr {
		cuts = append(cuts, fmt.Sprintf("stderr shows the head and tail of %s", sandbox.FormatSize(int64(len(res.Stderr)))))
	}
	r.Output += outNote
	r.Stderr += errNote
	if len(res.Stdout) == 0 && v.Kind == sandbox.VerdictOK && v.Note == "" {
		r.Output = noOutput
	}
	r.Truncated = res.Truncated() || cutOut || cutErr
	if len(cuts) > 0 {
		r.Cut = fmt.Sprintf("cut to fit in %s: %s", sandbox.FormatSize(MaxToolResult), strings.Join(cuts, "; "))
	}
	return r, len(cuts) > 0
}

// nameList returns names made safe to show and cut to resultNameChars,
// as many as fit in n bytes of JSON, then "… and N more" for the rest. It
// returns how many names it lists and whether it shortened one.
func nameList(names []string, n int) (out []string, listed int, shortened bool) {
	used := 2 // []
	for i, name := range names {
		s, cut := cutLine(name, resultNameChars)
		c := jsonCost(s) + 3 // quotes and comma
		if used+c > n-32 && i < len(names)-1 || used+c > n {
			return append(out, fmt.Sprintf("… and %s more", commas(len(names)-i))), i, shortened
		}
		used += c
		out = append(out, s)
		shortened = shortened || cut
	}
	return out, len(names), shortened
}

// listCost is the bytes of JSON of a list of strings, with its field name.
func listCost(list []string) int {
	if len(list) == 0 {
		return 0
	}
	n := len(`,"filesOmitted":[]`)
	for _, s := range list {
		n += jsonCost(s) + 3
	}
	return n
}

// runeCost is how many bytes JSON takes for a rune of w bytes once
// neutralised ([safetext.Text]), as encoding/json writes it (or more):
// escapes for quotes, backslashes, line feeds and tabs; \u escapes for <,
// >, &, U+2028 and U+2029; else what safetext makes of it (a 3-byte
// stand-in for a control, DEL, a C1 control, a bidi control or a byte
// that is not UTF-8; nothing for an invisible character).
func runeCost(r rune, w int) int {
	switch {
	case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t':
		return 2
	case r == '<' || r == '>' || r == '&' || r == '\u2028' || r == '\u2029':
		return 6
	}
	return safetext.MaxLen(r, w)
}

// jsonCost is the bytes of JSON s takes inside quotes.
func jsonCost(s string) int {
	n := 0
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		n += runeCost(r, w)
		i += w
	}
	return n
}

// costUpTo is the bytes of JSON b takes inside quotes, or limit when that
// is more: it reads no further than it needs.
func costUpTo(b []byte, limit int) int {
	n := 0
	for i := 0; i < len(b) && n < limit; {
		r, w := utf8.DecodeRune(b[i:])
		n += runeCost(r, w)
		i += w
	}
	return min(n, limit)
}

// clip keeps what fits of b in n bytes of JSON, neutralised
// ([safetext.Text]): three quarters from the head and a quarter from the
// tail, whole runes, with a note of what was left out between them. It
// reads no more of b than it keeps.
func clip(b []byte, n int) (string, bool) {
	if costUpTo(b, n+1) <= n {
		return safetext.Text(string(b)), false
	}
	room := max(n-clipNoteBytes, 0)
	head, spent := 0, 0
	for head < len(b) {
		r, w := utf8.DecodeRune(b[head:])
		c := runeCost(r, w)
		if spent+c > room*3/4 {
			break
		}
		spent += c
		head += w
	}
	tail := len(b)
	for tail > head {
		r, w := utf8.DecodeLastRune(b[head:tail])
		c := runeCost(r, w)
		if spent+c > room {
			break
		}
		spent += c
		tail -= w
	}
	return fmt.Sprintf("%s\n[... %s left out ...]\n%s", safetext.Text(string(b[:head])), sandbox.FormatSize(int64(tail-head)), safetext.Text(string(b[tail:]))), true
}
