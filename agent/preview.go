package agent

import (
	"bytes"
	"context"
	"fmt"
	"image"
	_ "image/gif" // DecodeConfig for previews
	_ "image/jpeg"
	_ "image/png"
	"io"
	"path"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"

	"github.com/sandpiper-bot/sandpiper/sandbox"
	"github.com/sandpiper-bot/sandpiper/sandbox/safetext"
)

// Budgets of the file descriptions given to the model, and of the work
// behind each preview. Whatever a file holds, its preview allocates a few
// tens of megabytes at most and takes well under a second of CPU (see
// TestPreviewBombs and BenchmarkPreviewWorst), and at most previewSlots
// previews run at once in the process.
const (
	// What the model is shown.
	previewLines     = 6    // lines of a text file shown (a CSV's header and 5 rows); rows of a workbook
	previewLineChars = 240  // characters of each such line, and of each workbook cell
	previewChars     = 1200 // characters of one file's preview, give or take a line
	previewBytes     = 4096 // bytes of one file's preview, whatever it holds
	previewSheets    = 20   // sheet names listed for a workbook
	sheetNameChars   = 64   // characters of a sheet name (Excel allows 31)
	previewCells     = 64   // cells of a workbook row kept (the line shows fewer)
	describeChars    = 8000 // characters of the list of files
	sourceChars      = 200  // characters of where a file came from
	notesChars       = 2000 // characters of the notes on files left out
	noteChars        = 300  // characters of one such note

	// The work behind one preview.
	textHeadBytes     = previewLines * (previewLineChars*utf8.UTFMax + 2) // bytes of a text file decoded
	imageHeadBytes    = 1 << 20                                           // bytes an image's header may span
	zipDirectoryBytes = 1 << 20                                           // bytes of a workbook's zip directory decoded
	xlsxBookBytes     = 1 << 20                                           // decompressed bytes read of a workbook's list of sheets, and of its relationships
	xlsxSheetBytes    = 2 << 20                                           // ... of its first sheet, whose first rows come first
	xlsxStringsBytes  = 4 << 20                                           // ... of its shared strings
	xlsxEntryMax      = 1 << 30                                           // declared size past which an entry is a zip bomb
	deflateMaxRatio   = 1032                                              // deflate's best ratio: an entry declaring more lies
	xmlDepth          = 64                                                // nesting of a workbook part's elements (Excel's nest below 10)
	xmlTagBytes       = 16 << 10                                          // bytes of one tag, which bounds the attributes decoded at once
	xmlTokens         = 150_000                                           // XML tokens and attributes decoded per workbook

	// Sharing the host.
	previewSlots = 2                // previews made at once in the process
	previewWait  = 10 * time.Second // longest a file waits for a slot; then it goes without a preview
)

// previewSem holds a token per preview being made, process-wide, so that
// many answers describing many files at once cannot add up.
var previewSem = make(chan struct{}, previewSlots)

// preview is one file's description: its kind ("PNG image, 64×48 pixels"),
// the lines shown under it, and the budgets that stopped its work.
type preview struct {
	kind  string
	text  string
	fired []string // each once, worded for the model
}

// budget is what one preview may still do, and records which of its
// budgets fired.
type budget struct {
	ctx    context.Context
	tokens int // XML tokens and attributes left
	fired  []string
}

func newBudget(ctx context.Context) *budget { return &budget{ctx: ctx, tokens: xmlTokens} }

// fire records that the preview stopped short, why worded for the model.
func (b *budget) fire(why string) {
	if !slices.Contains(b.fired, why) {
		b.fired = append(b.fired, why)
	}
}

// previewFile describes one file, waiting for a slot of previewSem. A file
// that gets no slot in time (or whose ctx ends) goes without a preview.
func previewFile(ctx context.Context, name string, data []byte) preview {
	t := time.NewTimer(previewWait)
	defer t.Stop()
	select {
	case previewSem <- struct{}{}:
		defer func() { <-previewSem }()
	case <-ctx.Done():
		return preview{kind: FileKind(name), fired: []string{"no preview: the answer ended first"}}
	case <-t.C:
		return preview{kind: FileKind(name), fired: []string{"no preview: the host was busy with other previews"}}
	}
	b := newBudget(ctx)
	p := describeFile(name, data, b)
	p.fired = b.fired
	if len(p.text) > previewBytes { // a last guard: the previewers keep below it
		cut := strings.LastIndexByte(p.text[:previewBytes], '\n')
		p.text = p.text[:max(cut, 0)]
	}
	return p
}

// describeFile returns a file's kind and preview, within b.
func describeFile(name string, data []byte, b *budget) preview {
	kind := FileKind(name)
	switch strings.ToLower(path.Ext(name)) {
	case ".png", ".jpg", ".jpeg", ".gif":
		if w, h, ok := imageSize(data, b); ok {
			kind += fmt.Sprintf(", %d×%d pixels", w, h)
		}
		return preview{kind: kind}
	case ".xlsx", ".xlsm":
		return preview{kind: kind, text: workbookPreview(data, b)}
	}
	return textPreview(kind, data)
}

// imageSize reads an image's size from its header, reading at most
// imageHeadBytes.
func imageSize(data []byte, b *budget) (w, h int, ok bool) {
	r := &io.LimitedReader{R: bytes.NewReader(data), N: imageHeadBytes}
	c, _, err := image.DecodeConfig(r)
	if err != nil {
		if r.N == 0 {
			b.fire(fmt.Sprintf("the image's header is over %s", sandbox.FormatSize(imageHeadBytes)))
		}
		return 0, 0, false
	}
	return c.Width, c.Height, true
}

// workbookPreview shows an Excel file's sheet names and the first rows of
// its first sheet.
func workbookPreview(data []byte, b *budget) string {
	wb := readWorkbook(data, previewLines, b)
	if len(wb.sheets) == 0 {
		return ""
	}
	var s strings.Builder
	s.WriteString("sheets: ")
	more := wb.moreSheets
	for i, name := range wb.sheets {
		q := fmt.Sprintf("%q", name)
		if i > 0 && s.Len()+len(q) > previewLineChars*utf8.UTFMax {
			more += len(wb.sheets) - i
			break
		}
		if i > 0 {
			s.WriteString(", ")
		}
		s.WriteString(q)
	}
	if more > 0 {
		fmt.Fprintf(&s, " and %s more", commas(more))
	}
	if len(wb.rows) > 0 {
		fmt.Fprintf(&s, "\nfirst rows of %q (cells as stored; dates are day numbers):", wb.sheets[0])
		for _, row := range wb.rows {
			line, _ := cutLine(strings.Join(row, " | "), previewLineChars)
			s.WriteString("\n| " + line)
			if s.Len() > previewChars {
				break
			}
		}
	}
	return s.String()
}

// textPreview shows the first lines of a text file, in any encoding
// decodeText reads, and counts its lines.
func textPreview(kind string, data []byte) preview {
	head := data[:min(len(data), textHeadBytes)]
	text, enc, ok := decodeText(head, len(data))
	if !ok {
		if kind == "file" {
			kind = "binary file"
		}
		return preview{kind: kind}
	}
	if kind == "file" {
		kind = "text"
	}
	if enc != "" {
		// pandas and open() assume UTF-8 and would fail on the first byte.
		kind += fmt.Sprintf(", not UTF-8 but %s: read it with encoding=%q", enc, enc)
	}
	// Only the head is split into lines: a file may be 25 MiB. Counting
	// the lines of it all allocates nothing.
	nl := []byte("\n")
	if enc == "utf-16" {
		nl = []byte("\n\x00")
		if bytes.HasPrefix(data, []byte{0xfe, 0xff}) {
			nl = []byte("\x00\n")
		}
	}
	total := bytes.Count(data, nl)
	if !bytes.HasSuffix(data, nl) && len(data) > 0 {
		total++
	}
	text = strings.TrimPrefix(text, "\ufeff")
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	shown := lines[:min(len(lines), previewLines)]
	var b strings.Builder
	b.WriteString("first lines:\n")
	for _, l := range shown {
		l, cut := cutRunes(l, previewLineChars)
		b.WriteString("| " + lineKeepingTabs(l))
		if cut {
			b.WriteString("…")
		}
		b.WriteString("\n")
		if b.Len() > previewChars {
			break
		}
	}
	if total > len(shown) {
		fmt.Fprintf(&b, "(%s lines in all)", commas(total))
	}
	return preview{kind: kind, text: b.String()}
}

// decodeText returns the head of a file (size bytes in all) as text, and
// the encoding Python needs to read it: "" for UTF-8, "utf-16" for a
// file with a UTF-16 byte-order mark (as Excel exports "Unicode text"),
// or "cp1252" / "latin-1" for 8-bit text that is not UTF-8 (as older
// Excel and Windows tools write CSV). ok is false for binary data.
func decodeText(head []byte, size int) (text, enc string, ok bool) {
	if looksLikeText(head) {
		if len(head) < size { // a rune cut by the end of the head
			for i := 0; i < utf8.UTFMax-1 && !utf8.Valid(head); i++ {
				head = head[:len(head)-1]
			}
		}
		return string(head), "", true
	}
	var dec *encoding.Decoder
	switch {
	case bytes.HasPrefix(head, []byte{0xff, 0xfe}), bytes.HasPrefix(head, []byte{0xfe, 0xff}):
		enc = "utf-16"
		head = head[:len(head)&^1] // whole code units
		if len(head) < size && len(head) >= 4 {
			// A surrogate pair cut by the end of the head.
			u := uint16(head[len(head)-2])<<8 | uint16(head[len(head)-1])
			if head[0] == 0xff {
				u = u>>8 | u<<8
			}
			if u >= 0xd800 && u < 0xdc00 {
				head = head[:len(head)-2]
			}
		}
		// The byte-order mark says which order; it is not part of the text.
		dec = unicode.UTF16(unicode.LittleEndian, unicode.ExpectBOM).NewDecoder()
	case slices.ContainsFunc(head, cp1252Undefined):
		// Python's cp1252 codec fails on these bytes; latin-1 reads any.
		enc, dec = "latin-1", charmap.ISO8859_1.NewDecoder()
	default:
		enc, dec = "cp1252", charmap.Windows1252.NewDecoder()
	}
	out, err := dec.Bytes(head)
	if err != nil {
		return "", "", false
	}
	text = string(out)
	return text, enc, printable(text)
}

// cp1252Undefined reports whether c is one of the five bytes Windows-1252
// leaves undefined.
func cp1252Undefined(c byte) bool {
	return c == 0x81 || c == 0x8d || c == 0x8f || c == 0x90 || c == 0x9d
}

// printable reports whether text has no control characters but whitespace.
func printable(text string) bool {
	for _, r := range text {
		if (r < 0x20 && r != '\n' && r != '\r' && r != '\t' && r != '\f') || r == 0x7f {
			return false
		}
	}
	return true
}

// looksLikeText reports whether the head of data is UTF-8 text without
// control characters other than whitespace.
func looksLikeText(data []byte) bool {
	head := data[:min(len(data), 4096)]
	// A rune cut by the 4 KiB boundary is not a reason to call it binary.
	for i := 0; i < utf8.UTFMax-1 && len(head) < len(data) && !utf8.Valid(head); i++ {
		head = head[:len(head)-1]
	}
	return utf8.Valid(head) && printable(string(head))
}

// cutRunes returns s cut to at most n runes (a byte that is not UTF-8
// counts as one), and whether it cut. It reads no further than the cut,
// so s may be long.
func cutRunes(s string, n int) (string, bool) {
	i := 0
	for range n {
		if i >= len(s) {
			return s, false
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	if i >= len(s) {
		return s, false
	}
	return s[:i], true
}

// cutLine returns s cut to n runes, with "…" when it was cut, and made safe
// to show on one line (see [safetext.Line]); it holds at most n+1 runes.
func cutLine(s string, n int) (string, bool) {
	s, cut := cutRunes(s, n)
	s = safetext.Line(s)
	if cut {
		s += "…"
	}
	return s, cut
}

// lineKeepingTabs is [safetext.Line] but for tabs, which separate the
// columns of a TSV file.
func lineKeepingTabs(s string) string {
	if !strings.Contains(s, "\t") {
		return safetext.Line(s)
	}
	parts := strings.Split(s, "\t")
	for i, p := range parts {
		parts[i] = safetext.Line(p)
	}
	return strings.Join(parts, "\t")
}
