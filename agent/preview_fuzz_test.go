package agent

// Fuzz targets of the previewers, one each: text in every encoding read,
// workbooks (as zip bytes, and as the XML of their parts), JSON and
// images. Each checks the budgets' invariants.

import (
	"archive/zip"
	"bytes"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// checkPreviewOf previews data as a file named file and checks what every
// preview keeps to: it allocates less than maxPreviewAlloc, its previewer
// writes less than previewBytes, the description is small and safe to
// show, and a budget that fired is reported as CapPreview.
func checkPreviewOf(t *testing.T, file string, data []byte) preview {
	t.Helper()
	var raw preview
	b := newBudget(t.Context())
	alloc := allocated(func() { raw = describeFile(file, data, b) })
	raw.fired = b.fired
	if alloc > maxPreviewAlloc {
		t.Fatalf("the preview allocated %d MiB", alloc>>20)
	}
	if len(raw.text) > previewBytes {
		t.Fatalf("the previewer wrote %d bytes, more than %d:\n%s", len(raw.text), previewBytes, raw.text)
	}
	desc, caps := DescribeFiles(t.Context(), []InputFile{{File: sandbox.File{Name: file, Data: data}}}, nil)
	checkDescription(t, desc, true)
	if len(raw.fired) > 0 != slices.Contains(caps, sandbox.CapPreview) {
		t.Fatalf("budgets fired %q, caps %v", raw.fired, caps)
	}
	return raw
}

// FuzzPreviewText previews bytes as CSV, TSV and text: UTF-8, UTF-16
// with either byte-order mark, cp1252 and latin-1.
func FuzzPreviewText(f *testing.F) {
	utf16 := func(bom []byte, s string, be bool) []byte {
		b := slices.Clone(bom)
		for _, r := range s {
			if be {
				b = append(b, byte(r>>8), byte(r))
			} else {
				b = append(b, byte(r), byte(r>>8))
			}
		}
		return b
	}
	for _, s := range [][]byte{
		[]byte("month,region,revenue\r\n2024-01,north,1001\r\n"),
		[]byte("\ufeffname\tcity\nZoë\tMünchen\n"),
		utf16([]byte{0xff, 0xfe}, "name\tcity\nZoë\tMünchen\n", false),
		utf16([]byte{0xfe, 0xff}, "a,b\n1,\U0001F600\n", true),
		[]byte("name;price\nCaf\xe9;3\x80\n"),
		[]byte("x\n\x81\xe9\x9b2J\n"),
		[]byte("a\u202eb\x1b[2J\n"),
		utf16Garbage(300),
		[]byte(strings.Repeat("x", 3000) + "\n"),
		{},
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, file := range []string{"f.csv", "f.tsv", "f.txt", "f"} {
			p := checkPreviewOf(t, file, data)
			if p.text != "" && !strings.HasPrefix(p.text, "first lines:\n") {
				t.Fatalf("preview of %s: %q", file, p.text)
			}
		}
	})
}

// FuzzPreviewJSON previews bytes as JSON, which is shown as text.
func FuzzPreviewJSON(f *testing.F) {
	for _, s := range []string{
		`{"a":[1,2,{"b":null}],"c":"\u001b[2J"}`,
		strings.Repeat(`[{"a":`, 200),
		"{\"k\":\"\x1b]0;title\x07\"}\n",
		"\ufeff[1,\n2]\n",
		`{"a":"` + strings.Repeat("é", 500) + `"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, file := range []string{"f.json", "f.jsonl"} {
			checkPreviewOf(t, file, data)
		}
	})
}

// FuzzPreviewImage previews bytes as PNG, JPEG and GIF: only the size is
// read, from a bounded head.
func FuzzPreviewImage(f *testing.F) {
	img := image.NewRGBA(image.Rect(0, 0, 3, 2))
	for _, enc := range []func(io.Writer) error{
		func(w io.Writer) error { return png.Encode(w, img) },
		func(w io.Writer) error { return jpeg.Encode(w, img, nil) },
		func(w io.Writer) error { return gif.Encode(w, img, nil) },
	} {
		var b bytes.Buffer
		if err := enc(&b); err != nil {
			f.Fatal(err)
		}
		f.Add(b.Bytes())
	}
	f.Add(pngWithChunk(f, 1<<31-1, 10, 10))
	f.Add(pngWithChunk(f, -1, 1<<31-1, 1<<31-1))
	f.Add(jpegWithSegments(1, 64))
	f.Add(gifHead(65535, 65535))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, file := range []string{"f.png", "f.jpg", "f.gif"} {
			if p := checkPreviewOf(t, file, data); p.text != "" {
				t.Fatalf("an image's preview holds text: %q", p.text)
			}
		}
	})
}

// FuzzPreviewXLSX previews bytes as a workbook. Its seeds are a workbook
// written by openpyxl, and the shared-string bomb, deep nesting and far
// columns, small: TestPreviewBombs has them large.
func FuzzPreviewXLSX(f *testing.F) {
	real, err := os.ReadFile("testdata/small.xlsx")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(real)
	f.Add(sharedStringBomb(f, 4<<10, 2, 20))
	f.Add(deepBomb(f, 300))
	f.Add(wideBomb(f, 2, 10))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkPreviewOf(t, "f.xlsx", data)
	})
}

// FuzzPreviewWorkbookXML previews workbooks whose parts hold the fuzzed
// XML, stored uncompressed so that the fuzzer's changes reach the XML
// readers.
func FuzzPreviewWorkbookXML(f *testing.F) {
	f.Add(bombBook, bombRels,
		`<worksheet><sheetData><row r="1"><c r="A1" t="s"><v>0</v></c><c r="C1" t="b"><v>1</v></c><c r="XFD1"><v>2</v></c></row></sheetData></worksheet>`,
		`<sst><si><t>city</t></si><si><r><t>a</t></r><rPh><t>b</t></rPh></si></sst>`)
	f.Add(`<workbook><sheets><sheet name="&#x9b;&#x202e;x"/></sheets></workbook>`, "",
		`<worksheet><sheetData><row><c t="inlineStr"><is><t>&#x9b;2J`+strings.Repeat("<a>", 100)+`</t></is></c></row>`,
		`<sst><si><t><![CDATA[<>]]></t></si></sst>`)
	f.Fuzz(func(t *testing.T, book, rels, sheet, sst string) {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		for _, p := range []struct{ name, body string }{
			{"xl/workbook.xml", book}, {"xl/_rels/workbook.xml.rels", rels},
			{"xl/worksheets/sheet1.xml", sheet}, {"xl/sharedStrings.xml", sst},
		} {
			w, err := zw.CreateHeader(&zip.FileHeader{Name: p.name, Method: zip.Store})
			if err != nil {
				t.Fatal(err)
			}
			io.WriteString(w, p.body)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		checkPreviewOf(t, "f.xlsx", buf.Bytes())
	})
}
