package agent

import (
	"bytes"
	"context"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// maxPreviewAlloc bounds the bytes one preview may allocate, in all: the
// issue allows 64 MB of extra memory per file, and what a preview holds at
// once is well below what it allocates in all.
const maxPreviewAlloc = 48 << 20

// allocated returns the bytes f allocates, in all: deterministic, and an
// upper bound on what it holds at once.
func allocated(f func()) uint64 {
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	f()
	runtime.ReadMemStats(&m1)
	return m1.TotalAlloc - m0.TotalAlloc
}

// bomb is a file built to make a preview costly.
type bomb struct {
	name string // of the test
	file string
	data func(testing.TB) []byte
	cut  bool     // a budget must fire
	want []string // in the description
}

// bombs are the worst files we could build, for each previewer.
var bombs = []bomb{
	{"issue: one 2 MiB shared string in 6,000 cells", "b.xlsx", func(tb testing.TB) []byte { return sharedStringBomb(tb, 2<<20, 6, 1000) }, false,
		[]string{"| " + strings.Repeat("A", previewLineChars) + "…\n"}},
	{"issue: one 9 MiB shared string", "b.xlsx", func(tb testing.TB) []byte { return sharedStringBomb(tb, 9<<20, 6, 1000) }, true,
		[]string{"| … | … |", "a part of the file is over 4.0 MiB"}},
	{"CDATA of 4 MiB", "b.xlsx", func(tb testing.TB) []byte { return cdataBomb(tb, 8<<20) }, true, []string{"| …\n"}},
	{"every budget spent at once", "b.xlsx", everyBudgetBomb, true, []string{"| …", "more than 150,000 XML tokens"}},
	{"every part nested 2 million deep", "b.xlsx", func(tb testing.TB) []byte { return deepBomb(tb, 2_000_000) }, true,
		[]string{"XML nested deeper than 64 elements"}},
	{"a cell nested 1 million deep", "b.xlsx", func(tb testing.TB) []byte { return deepSheetBomb(tb, 1_000_000) }, true,
		[]string{`sheets: "Sheet1"`, "XML nested deeper than 64 elements"}},
	{"tags of 1,800 attributes", "b.xlsx", func(tb testing.TB) []byte { return attributeBomb(tb, 2000, 1800) }, true,
		[]string{"more than 150,000 XML tokens"}},
	{"a tag of 100,000 attributes", "b.xlsx", func(tb testing.TB) []byte { return attributeBomb(tb, 10, 100_000) }, true,
		[]string{"an XML tag is over 16.0 KiB"}},
	{"2 million empty elements", "b.xlsx", func(tb testing.TB) []byte { return tokenBomb(tb, 2_000_000) }, true,
		[]string{"more than 150,000 XML tokens"}},
	{"cells at column XFD and 20,000 a row", "b.xlsx", func(tb testing.TB) []byte { return wideBomb(tb, 6, 20_000) }, true,
		[]string{"|  | B | ZZZZZZZZZZZZZZ | 1 | 1 |"}},
	{"200 sheets with long hostile names", "b.xlsx", func(tb testing.TB) []byte { return manySheetsBomb(tb, 200) }, false,
		[]string{"sheets: \"\ufffd2J\ufffd␉\ufffd2J", "…\", \"", " and 194 more"}},
	{"20,000 sheets with long hostile names", "b.xlsx", func(tb testing.TB) []byte { return manySheetsBomb(tb, 20_000) }, true,
		[]string{"sheets: \"\ufffd2J\ufffd␉\ufffd2J", " more\n", "a part of the file is over 1.0 MiB"}},
	{"512 MiB of whitespace inflated", "b.xlsx", func(tb testing.TB) []byte { return inflateBomb(tb, 512<<20) }, true,
		[]string{"a part of the file is over 2.0 MiB"}},
	{"a part declaring 4 GiB", "b.xlsx", lyingZipBomb, true, []string{"declares an impossible size"}},
	{"a part inflating past what it declares", "b.xlsx", understatedBomb, true, []string{"holds more than it declares (a zip bomb)"}},
	{"240,000 zip entries", "b.xlsx", func(testing.TB) []byte { return manyEntriesZip(240_000) }, true,
		[]string{"the zip directory is over 1.0 MiB"}},
	{"a CSV of one 25 MiB line", "one.csv", func(testing.TB) []byte { return bytes.Repeat([]byte("x,"), 25<<19) }, false,
		[]string{"| x,x,x", "x,…"}},
	{"25 MiB of line feeds", "lf.csv", func(testing.TB) []byte { return bytes.Repeat([]byte("\n"), 25<<20) }, false,
		[]string{"(26,214,400 lines in all)"}},
	{"25 MiB of UTF-16 garbage", "u16.txt", func(testing.TB) []byte { return utf16Garbage(25 << 20) }, false,
		[]string{`encoding="utf-16"`, "| \ufffd\ufffd"}},
	{"25 MiB of cp1252", "w.csv", func(testing.TB) []byte { return bytes.Repeat([]byte("caf\xe9 \x80;"), 25<<17) }, false,
		[]string{`encoding="cp1252"`, "| café €;café €;"}},
	{"25 MiB of latin-1 with C1 controls", "l.csv", func(testing.TB) []byte { return bytes.Repeat([]byte("\x9b2J\x81\xe9\n"), 25<<18) }, false,
		[]string{`encoding="latin-1"`, "| \ufffd2J\ufffdé\n"}},
	{"25 MiB of nested JSON", "deep.json", func(testing.TB) []byte { return bytes.Repeat([]byte("[{\"a\":"), 25<<20/6) }, false,
		[]string{`| [{"a":[{"a":`}},
	{"a PNG chunk of 2 GiB before IHDR", "big.png", func(tb testing.TB) []byte { return pngWithChunk(tb, 1<<31-1, 10, 10) }, false,
		[]string{"PNG image)"}},
	{"a PNG of 10⁶×10⁶ pixels", "wide.png", func(tb testing.TB) []byte { return pngWithChunk(tb, -1, 1e6, 1e6) }, false,
		[]string{"PNG image, 1000000×1000000 pixels"}},
	{"a JPEG whose header is 1.3 MiB", "photo.jpg", func(testing.TB) []byte { return jpegWithSegments(20, 0xffff) }, true,
		[]string{"JPEG image)", "the image's header is over 1.0 MiB"}},
	{"a JPEG whose header is 640 KiB", "photo.jpg", func(testing.TB) []byte { return jpegWithSegments(10, 0xffff) }, false,
		[]string{"JPEG image, 4000×3000 pixels)"}},
	{"a GIF of 65535×65535 pixels", "a.gif", func(testing.TB) []byte { return gifHead(65535, 65535) }, false,
		[]string{"GIF image, 65535×65535 pixels)"}},
}

// TestPreviewBombs: whatever a file holds, its preview allocates less than
// maxPreviewAlloc, the description stays small and safe to show, and a
// budget that stopped the preview is reported.
func TestPreviewBombs(t *testing.T) {
	for _, tc := range bombs {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.data(t)
			var desc string
			var caps []sandbox.Cap
			start := time.Now()
			alloc := allocated(func() {
				desc, caps = DescribeFiles(t.Context(), []InputFile{{File: sandbox.File{Name: tc.file, Data: data}}}, nil)
			})
			t.Logf("%d bytes: %d KiB allocated in %v", len(data), alloc>>10, time.Since(start))
			if alloc > maxPreviewAlloc {
				t.Errorf("the preview allocated %d MiB, more than %d MiB", alloc>>20, maxPreviewAlloc>>20)
			}
			checkDescription(t, desc, true)
			if got := slices.Contains(caps, sandbox.CapPreview); got != tc.cut {
				t.Errorf("CapPreview reported: %v, want %v", got, tc.cut)
			}
			if tc.cut != strings.Contains(desc, "(preview incomplete: ") {
				t.Errorf("the description does not say whether the preview is complete")
			}
			for _, want := range tc.want {
				if !strings.Contains(desc, want) {
					t.Errorf("description lacks %q:\n%s", want, desc)
				}
			}
		})
	}
}

// BenchmarkPreviewWorst reports the cost of each bomb's preview.
func BenchmarkPreviewWorst(b *testing.B) {
	for _, tc := range bombs {
		b.Run(tc.name, func(b *testing.B) {
			files := []InputFile{{File: sandbox.File{Name: tc.file, Data: tc.data(b)}}}
			b.ReportAllocs()
			for b.Loop() {
				DescribeFiles(b.Context(), files, nil)
			}
		})
	}
}

// checkDescription checks what every description keeps to: valid UTF-8
// without controls but line feeds (and tabs, which separate a TSV's
// columns, when tabs), C1 controls or bidi controls, within its size.
func checkDescription(t *testing.T, desc string, tabs bool) {
	t.Helper()
	if !utf8.ValidString(desc) {
		t.Fatalf("description is not UTF-8: %q", desc)
	}
	for _, r := range desc {
		if r < 0x20 && r != '\n' && (r != '\t' || !tabs) || r == 0x7f || r >= 0x80 && r <= 0x9f ||
			r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 {
			t.Fatalf("description holds %U:\n%q", r, desc)
		}
	}
	if len(desc) > describeChars+notesChars+512 {
		t.Fatalf("description is %d bytes, more than its budget", len(desc))
	}
}

// TestDescribeFilesNeutralises: names, sources, notes, sheet names and
// cells reach the model without escape sequences or bidi overrides, and
// many long notes stay within their budget.
func TestDescribeFilesNeutralises(t *testing.T) {
	book := makeZip(t,
		part("xl/workbook.xml", once(`<workbook `+xlsxNS+`><sheets><sheet name="a&#x9b;31m&#x202e;b" r:id="rId1"/></sheets></workbook>`)),
		part("xl/_rels/workbook.xml.rels", once(bombRels)),
		part("xl/worksheets/sheet1.xml", once(`<worksheet><sheetData><row><c t="inlineStr"><is><t>x&#x9b;2J&#x2066;y&#10;z&#9;w</t></is></c></row></sheetData></worksheet>`)))
	var notes []string
	for range 1000 {
		notes = append(notes, "gone\x1b]0;title\x07.csv: "+strings.Repeat("\u202e", 4000))
	}
	desc, _ := DescribeFiles(t.Context(), []InputFile{
		{File: sandbox.File{Name: "evil\x1b[2J\u202egnp.csv", Data: []byte("a\u202eb\t\u0085c\n")}, Source: "from\nsomewhere\x1b[1A"},
		{File: sandbox.File{Name: "book.xlsx", Data: book}},
	}, notes)
	checkDescription(t, desc, true)
	for _, want := range []string{
		"- /mnt/data/evil␛[2J\ufffdgnp.csv (", "CSV table, from␊somewhere␛[1A)\n",
		"| a\ufffdb\t\ufffdc\n",
		`sheets: "a` + "\ufffd" + `31m` + "\ufffd" + `b"`,
		"| x\ufffd2J\ufffdy␊z␉w\n",
		"- gone␛]0;title␇.csv: \ufffd\ufffd",
		"- … and 998 more",
	} {
		if !strings.Contains(desc, want) {
			t.Errorf("description lacks %q:\n%s", want, desc)
		}
	}
}

// TestWorkbookStopsAtWhatItNeeds: what follows the list of sheets and the
// rows of a short sheet is not read, so that a long tail does not make a
// preview incomplete.
func TestWorkbookStopsAtWhatItNeeds(t *testing.T) {
	tail := seg{`<definedName name="x">Sheet1!A1</definedName>`, 100_000} // 4.4 MiB
	book := makeZip(t,
		part("xl/workbook.xml", once(`<workbook `+xlsxNS+`><sheets><sheet name="S" r:id="rId1"/></sheets><definedNames>`), tail, once(`</definedNames></workbook>`)),
		part("xl/_rels/workbook.xml.rels", once(bombRels)),
		part("xl/worksheets/sheet1.xml", once(sheetHead+lateRow+`</sheetData><mergeCells>`), seg{`<mergeCell ref="A1:B2"/>`, 200_000}, once(`</mergeCells></worksheet>`)))
	desc, caps := DescribeFiles(t.Context(), []InputFile{{File: sandbox.File{Name: "b.xlsx", Data: book}}}, nil)
	if !strings.Contains(desc, "sheets: \"S\"\n    first rows of \"S\" (cells as stored; dates are day numbers):\n    | late") || len(caps) != 0 {
		t.Errorf("description (caps %v):\n%s", caps, desc)
	}
}

// TestDescribeRealWorkbook previews a workbook written by openpyxl
// (testdata/small.xlsx): inline strings, dates, booleans, a gap.
func TestDescribeRealWorkbook(t *testing.T) {
	data, err := os.ReadFile("testdata/small.xlsx")
	if err != nil {
		t.Fatal(err)
	}
	desc, caps := DescribeFiles(t.Context(), []InputFile{{File: sandbox.File{Name: "small.xlsx", Data: data}}}, nil)
	want := `    sheets: "Sales 2024", "Notes"
    first rows of "Sales 2024" (cells as stored; dates are day numbers):
    | month | region | revenue | closed | note |  | far
    | 45292 | south | 1001.5 | FALSE
    | 45323 | north | 1002.5 | FALSE | Zürich ✓`
	if !strings.Contains(desc, want) || len(caps) != 0 {
		t.Errorf("description (caps %v):\n%s\nwant:\n%s", caps, desc, want)
	}
}

// TestPreviewWaitsForASlot: previews share a process-wide semaphore; a
// file waits for a slot, and goes without a preview if its ctx ends
// first.
func TestPreviewWaitsForASlot(t *testing.T) {
	files := []InputFile{{File: sandbox.File{Name: "a.csv", Data: []byte("x,y\n1,2\n")}}}
	for range previewSlots {
		previewSem <- struct{}{}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	desc, caps := DescribeFiles(ctx, files, nil)
	if strings.Contains(desc, "| x,y") || !strings.Contains(desc, "(preview incomplete: no preview: the answer ended first)") || !slices.Contains(caps, sandbox.CapPreview) {
		t.Errorf("without a slot: %q, caps %v", desc, caps)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		<-previewSem
	}()
	desc, caps = DescribeFiles(t.Context(), files, nil)
	if !strings.Contains(desc, "| x,y") || len(caps) != 0 {
		t.Errorf("after a slot freed: %q, caps %v", desc, caps)
	}
	for range previewSlots - 1 {
		<-previewSem
	}
}

func TestCutRunes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
		cut  bool
	}{
		{"", 3, "", false},
		{"abc", 3, "abc", false},
		{"abcd", 3, "abc", true},
		{"日本語です", 2, "日本", true},
		{"a\xffb\xc3", 2, "a\xff", true},
		{"a\xffb\xc3", 4, "a\xffb\xc3", false},
		{strings.Repeat("é", 1<<20), 1, "é", true},
	} {
		got, cut := cutRunes(tc.in, tc.n)
		if got != tc.want || cut != tc.cut {
			t.Errorf("cutRunes(%.20q, %d) = %q, %v; want %q, %v", tc.in, tc.n, got, cut, tc.want, tc.cut)
		}
	}
	// It walks no further than the cut.
	long := strings.Repeat("x", 1<<20)
	if a := testing.AllocsPerRun(10, func() { cutRunes(long, previewLineChars) }); a != 0 {
		t.Errorf("cutRunes allocated %v times", a)
	}
}

func TestColumn(t *testing.T) {
	for ref, want := range map[string]int{"A1": 0, "C7": 2, "Z9": 25, "AA1": 26, "XFD1048576": 16383, "ZZZ1": 18277, "AAAA1": -1, "ZZZZZZZZZZZZZZ1": -1, "": -1, "1": -1, "a1": -1} {
		if got := column(ref); got != want {
			t.Errorf("column(%q) = %d, want %d", ref, got, want)
		}
	}
}
