package agent

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"image"
	_ "image/gif" // DecodeConfig for previews
	_ "image/jpeg"
	_ "image/png"
	"path"
	"slices"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// Budgets of the file descriptions given to the model.
const (
	previewLines     = 6    // lines of a text file shown (a CSV's header and 5 rows)
	previewLineChars = 240  // characters of each such line
	previewChars     = 1200 // characters of one file's preview
	describeChars    = 8000 // characters of the whole description
	previewSheets    = 20   // sheet names listed for a workbook
)

// Workspace is the working directory of one answer: the files every
// executeCode run of the answer starts with, updated with what each run
// writes, so that a second run can read a file the first one wrote
// although each run gets a fresh sandbox. Attach it to the ctx given to
// [Agent.Run] with [WithWorkspace]. It is safe for concurrent use.
type Workspace struct {
	maxSize int64

	mu    sync.Mutex
	files []sandbox.File // in the order first added
}

// NewWorkspace returns a workspace holding files. maxSize bounds the bytes
// it keeps (0: no bound beyond the sandbox's own limits); it keeps at most
// [sandbox.DefaultInputFiles] files, the most a sandbox accepts.
func NewWorkspace(files []sandbox.File, maxSize int64) *Workspace {
	w := &Workspace{maxSize: maxSize}
	w.Put(files)
	return w
}

// Files returns the workspace's files, for the next run.
func (w *Workspace) Files() []sandbox.File {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.files)
}

// Put adds files, replacing those with the same name. It returns the
// names of files it could not keep within the size bound.
func (w *Workspace) Put(files []sandbox.File) (dropped []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, f := range files {
		i := slices.IndexFunc(w.files, func(g sandbox.File) bool { return g.Name == f.Name })
		var total int64
		for j, g := range w.files {
			if j != i {
				total += int64(len(g.Data))
			}
		}
		if w.maxSize > 0 && total+int64(len(f.Data)) > w.maxSize || i < 0 && len(w.files) >= sandbox.DefaultInputFiles {
			dropped = append(dropped, f.Name)
			continue
		}
		if i >= 0 {
			w.files[i] = f
		} else {
			w.files = append(w.files, f)
		}
	}
	return dropped
}

type workspaceKey struct{}

// WithWorkspace returns a ctx whose executeCode runs start with w's files
// and add theirs to it.
func WithWorkspace(ctx context.Context, w *Workspace) context.Context {
	return context.WithValue(ctx, workspaceKey{}, w)
}

// WorkspaceFrom returns the workspace attached to ctx, or nil.
func WorkspaceFrom(ctx context.Context) *Workspace {
	w, _ := ctx.Value(workspaceKey{}).(*Workspace)
	return w
}

// InputFile is a file placed in the sandbox, with where it came from.
type InputFile struct {
	sandbox.File
	// Source says where the file came from, for the model, e.g.
	// "attached to this message" or "written by a run of an earlier answer".
	Source string
}

// DescribeFiles tells the model which files are in the working directory:
// for each its path, size, kind and a short preview (a CSV's header and
// first rows, a workbook's sheets, an image's size). notes (files that
// could not be placed, and why) follow the list. It returns "" when there
// is nothing to say.
func DescribeFiles(files []InputFile, notes []string) string {
	if len(files) == 0 && len(notes) == 0 {
		return ""
	}
	var b strings.Builder
	if len(files) > 0 {
		fmt.Fprintf(&b, "[Files in %s, the working directory of every executeCode run; read them from there:]\n", sandbox.WorkDir)
	}
	for i, f := range files {
		var entry strings.Builder
		kind, preview := describeFile(f.Name, f.Data)
		fmt.Fprintf(&entry, "- %s/%s (%s, %s", sandbox.WorkDir, f.Name, size(int64(len(f.Data))), kind)
		if f.Source != "" {
			entry.WriteString(", " + f.Source)
		}
		entry.WriteString(")\n")
		if preview != "" {
			for _, l := range strings.Split(strings.TrimRight(preview, "\n"), "\n") {
				entry.WriteString("    " + l + "\n")
			}
		}
		if b.Len()+entry.Len() > describeChars {
			fmt.Fprintf(&b, "- … and %d more files; list %s to see them all.\n", len(files)-i, sandbox.WorkDir)
			break
		}
		b.WriteString(entry.String())
	}
	if len(notes) > 0 {
		b.WriteString("[Files not available to the code:]\n")
		for _, n := range notes {
			b.WriteString("- " + n + "\n")
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// FileKind names a file's kind from its name, e.g. "CSV table".
func FileKind(name string) string {
	if k, ok := fileKinds[strings.ToLower(path.Ext(name))]; ok {
		return k
	}
	return "file"
}

var fileKinds = map[string]string{
	".csv": "CSV table", ".tsv": "TSV table", ".txt": "text", ".md": "Markdown text", ".log": "text log",
	".json": "JSON", ".jsonl": "JSON lines", ".ndjson": "JSON lines", ".xml": "XML", ".yaml": "YAML", ".yml": "YAML",
	".html": "HTML", ".htm": "HTML", ".py": "Python source", ".ipynb": "Jupyter notebook", ".sql": "SQL",
	".xlsx": "Excel workbook", ".xlsm": "Excel workbook", ".xls": "Excel 97 workbook", ".ods": "OpenDocument spreadsheet",
	".parquet": "Parquet table", ".feather": "Feather table", ".arrow": "Arrow table",
	".sqlite": "SQLite database", ".db": "database file", ".npy": "NumPy array", ".npz": "NumPy arrays",
	".pkl": "Python pickle", ".pickle": "Python pickle", ".zip": "zip archive", ".gz": "gzip file",
	".pdf": "PDF document", ".png": "PNG image", ".jpg": "JPEG image", ".jpeg": "JPEG image",
	".gif": "GIF image", ".svg": "SVG image", ".webp": "WebP image", ".dat": "data file",
}

// describeFile returns a file's kind and preview.
func describeFile(name string, data []byte) (kind, preview string) {
	ext := strings.ToLower(path.Ext(name))
	kind = FileKind(name)
	switch ext {
	case ".png", ".jpg", ".jpeg", ".gif":
		if c, _, err := image.DecodeConfig(bytes.NewReader(data)); err == nil {
			kind += fmt.Sprintf(", %d×%d pixels", c.Width, c.Height)
		}
		return kind, ""
	case ".xlsx", ".xlsm":
		wb := readWorkbook(data, previewLines)
		if len(wb.sheets) == 0 {
			return kind, ""
		}
		sheets, more := wb.sheets, ""
		if len(sheets) > previewSheets {
			sheets, more = sheets[:previewSheets], fmt.Sprintf(" and %d more", len(sheets)-previewSheets)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "sheets: %s%s", strings.Join(quoteAll(sheets), ", "), more)
		if len(wb.rows) > 0 {
			fmt.Fprintf(&b, "\nfirst rows of %q (cells as stored; dates are day numbers):", wb.sheets[0])
			for _, row := range wb.rows {
				line := strings.Join(row, " | ")
				if utf8.RuneCountInString(line) > previewLineChars {
					line = string([]rune(line)[:previewLineChars]) + "…"
				}
				b.WriteString("\n| " + line)
				if b.Len() > previewChars {
					break
				}
			}
		}
		return kind, b.String()
	}
	text, enc, ok := decodeText(data[:min(len(data), previewLines*(previewLineChars*4+2))], len(data))
	if !ok {
		if kind == "file" {
			kind = "binary file"
		}
		return kind, ""
	}
	if kind == "file" {
		kind = "text"
	}
	if enc != "" {
		// pandas and open() assume UTF-8 and would fail on the first byte.
		kind += fmt.Sprintf(", not UTF-8 but %s: read it with encoding=%q", enc, enc)
	}
	// Only the head is split into lines: a file may be 25 MiB.
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
		if utf8.RuneCountInString(l) > previewLineChars {
			l = string([]rune(l)[:previewLineChars]) + "…"
		}
		b.WriteString("| " + l + "\n")
		if b.Len() > previewChars {
			break
		}
	}
	if total > len(shown) {
		fmt.Fprintf(&b, "(%s lines in all)", commas(total))
	}
	return kind, b.String()
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
	switch {
	case bytes.HasPrefix(head, []byte{0xff, 0xfe}), bytes.HasPrefix(head, []byte{0xfe, 0xff}):
		order := binary.ByteOrder(binary.LittleEndian)
		if head[0] == 0xfe {
			order = binary.BigEndian
		}
		units := make([]uint16, 0, len(head)/2)
		for i := 2; i+1 < len(head); i += 2 {
			units = append(units, order.Uint16(head[i:]))
		}
		text = string(utf16.Decode(units))
		return text, "utf-16", printable(text)
	}
	var b strings.Builder
	enc = "cp1252"
	for _, c := range head {
		switch {
		case c < 0x80:
			b.WriteByte(c)
		case c >= 0xa0:
			b.WriteRune(rune(c))
		case cp1252[c-0x80] == 0: // undefined in cp1252: Python's codec would fail
			enc = "latin-1"
			b.WriteRune(rune(c))
		default:
			b.WriteRune(cp1252[c-0x80])
		}
	}
	text = b.String()
	return text, enc, printable(text)
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

// cp1252 maps the bytes 0x80–0x9f of Windows-1252 to their characters
// (index c-0x80); 0 where the byte is undefined. Bytes from 0xa0 are
// Latin-1.
var cp1252 = [0x20]rune{
	0x20ac, 0, 0x201a, 0x0192, 0x201e, 0x2026, 0x2020, 0x2021, 0x02c6, 0x2030, 0x0160, 0x2039, 0x0152, 0, 0x017d, 0,
	0, 0x2018, 0x2019, 0x201c, 0x201d, 0x2022, 0x2013, 0x2014, 0x02dc, 0x2122, 0x0161, 0x203a, 0x0153, 0, 0x017e, 0x0178,
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

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// commas formats n with thousands separators.
func commas(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
