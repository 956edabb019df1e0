package agent

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/sandpiper-bot/sandpiper/sandbox"
	"github.com/sandpiper-bot/sandpiper/sandbox/safetext"
)

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
//
// Every name, note and preview is made safe to show (see
// [safetext.Line]) and the whole stays within a fixed size. Each preview
// works within a fixed budget of memory and time whatever the file holds,
// and at most a few are made at once in the process: a file waits its
// turn, and goes without a preview when ctx ends first. caps holds
// [sandbox.CapPreview] when a preview stopped short of its budget, for
// operators; the description tells the model too.
func DescribeFiles(ctx context.Context, files []InputFile, notes []string) (desc string, caps []sandbox.Cap) {
	if len(files) == 0 && len(notes) == 0 {
		return "", nil
	}
	var b strings.Builder
	if len(files) > 0 {
		fmt.Fprintf(&b, "[Files in %s, the working directory of every executeCode run; read them from there:]\n", sandbox.WorkDir)
	}
	for i, f := range files {
		var entry strings.Builder
		p := previewFile(ctx, f.Name, f.Data)
		if len(p.fired) > 0 && !slices.Contains(caps, sandbox.CapPreview) {
			caps = append(caps, sandbox.CapPreview)
		}
		fmt.Fprintf(&entry, "- %s/%s (%s, %s", sandbox.WorkDir, safetext.Line(f.Name), sandbox.FormatSize(int64(len(f.Data))), p.kind)
		if f.Source != "" {
			source, _ := cutLine(f.Source, sourceChars)
			entry.WriteString(", " + source)
		}
		entry.WriteString(")\n")
		text := strings.TrimRight(p.text, "\n")
		if len(p.fired) > 0 {
			text += "\n(preview incomplete: " + strings.Join(p.fired, "; ") + ")"
		}
		if text = strings.TrimLeft(text, "\n"); text != "" {
			for l := range strings.SplitSeq(text, "\n") {
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
		used := 0
		for i, n := range notes {
			line, _ := cutLine(n, noteChars)
			if used += len(line); used > notesChars {
				fmt.Fprintf(&b, "- … and %d more\n", len(notes)-i)
				break
			}
			b.WriteString("- " + line + "\n")
		}
	}
	return strings.TrimRight(b.String(), "\n"), caps
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

// commas formats n with thousands separators.
func commas(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
