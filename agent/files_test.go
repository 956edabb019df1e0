package agent

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"io"
	"strings"
	"testing"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

func TestDescribeFiles(t *testing.T) {
	var csv strings.Builder
	csv.WriteString("\ufeffmonth,region,revenue\r\n")
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&csv, "2024-%02d,north,%d\r\n", i, 1000+i)
	}
	var img bytes.Buffer
	png.Encode(&img, image.NewGray(image.Rect(0, 0, 64, 48)))

	got := describe([]InputFile{
		{File: sandbox.File{Name: "sales.csv", Data: []byte(csv.String())}, Source: "attached to this message"},
		{File: sandbox.File{Name: "book.xlsx", Data: testWorkbook(t, "Q1", "Q2 \"final\"")}},
		{File: sandbox.File{Name: "chart.png", Data: img.Bytes()}, Source: "written by a run of an earlier answer"},
		{File: sandbox.File{Name: "blob", Data: []byte{0, 1, 2, 3}}},
		{File: sandbox.File{Name: "notes", Data: []byte("just words\n")}},
	}, []string{"movie.mp4: a video, which Python here cannot use"})
	for _, want := range []string{
		"[Files in /mnt/data, the working directory of every executeCode run; read them from there:]\n",
		"- /mnt/data/sales.csv (265 bytes, CSV table, attached to this message)\n" +
			"    first lines:\n    | month,region,revenue\n    | 2024-01,north,1001\n    | 2024-02,north,1002\n",
		"    | 2024-05,north,1005\n    (13 lines in all)\n",
		"- /mnt/data/book.xlsx (",
		`Excel workbook)` + "\n" + `    sheets: "Q1", "Q2 \"final\""`,
		"- /mnt/data/chart.png (", "PNG image, 64×48 pixels, written by a run of an earlier answer)\n",
		"- /mnt/data/blob (4 bytes, binary file)\n",
		"- /mnt/data/notes (11 bytes, text)\n    first lines:\n    | just words\n",
		"[Files not available to the code:]\n- movie.mp4: a video, which Python here cannot use",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("description lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "2024-06") {
		t.Errorf("the preview shows more than the header and five rows:\n%s", got)
	}
	if got, caps := DescribeFiles(t.Context(), nil, nil); got != "" || caps != nil {
		t.Error("no files should say nothing")
	}
}

func BenchmarkDescribeLargeCSV(b *testing.B) {
	data := bytes.Repeat([]byte("2024-01-01,north,12345.67,some text\n"), 700_000) // 25 MiB
	files := []InputFile{{File: sandbox.File{Name: "big.csv", Data: data}}}
	for b.Loop() {
		DescribeFiles(b.Context(), files, nil)
	}
}

func TestDescribeFilesBudget(t *testing.T) {
	var files []InputFile
	line := strings.Repeat("x", 1000) + "\n"
	for i := range 40 {
		files = append(files, InputFile{File: sandbox.File{Name: fmt.Sprintf("f%02d.txt", i), Data: []byte(strings.Repeat(line, 10))}})
	}
	got := describe(files, nil)
	if len(got) > describeChars+200 {
		t.Errorf("description is %d characters, over the %d budget", len(got), describeChars)
	}
	if !strings.Contains(got, "more files; list /mnt/data to see them all.") {
		t.Errorf("description does not say files were left out:\n%s", got[len(got)-300:])
	}
}

// testWorkbook is the smallest zip an xlsx reader of sheet names needs.
func testWorkbook(t *testing.T, sheets ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create("xl/workbook.xml")
	fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheets>`)
	for i, s := range sheets {
		var esc bytes.Buffer
		xmlEscape(&esc, s)
		fmt.Fprintf(w, `<sheet name="%s" sheetId="%d"/>`, esc.String(), i+1)
	}
	fmt.Fprint(w, `</sheets></workbook>`)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func xmlEscape(b *bytes.Buffer, s string) {
	s = strings.NewReplacer("&", "&amp;", "<", "&lt;", `"`, "&quot;").Replace(s)
	b.WriteString(s)
}

// TestDescribeFilesEncodings: CSVs that are not UTF-8, as Excel and older
// Windows tools write them, get a preview and the encoding to read them.
func TestDescribeFilesEncodings(t *testing.T) {
	utf16le := []byte{0xff, 0xfe}
	for _, r := range "name\tcity\nZoë\tMünchen\n" {
		utf16le = append(utf16le, byte(r), byte(r>>8))
	}
	for _, tc := range []struct {
		name string
		data []byte
		want []string
	}{
		{"cp1252.csv", []byte("name;price\nCaf\xe9;3\x80\nNa\xefve;5\x80\n"), []string{
			"CSV table, not UTF-8 but cp1252: read it with encoding=\"cp1252\")",
			"| name;price\n    | Café;3€\n    | Naïve;5€",
		}},
		{"latin1.csv", []byte("x\n\x81\xe9\n"), []string{`not UTF-8 but latin-1: read it with encoding="latin-1"`, "é"}},
		{"export.txt", utf16le, []string{
			"text, not UTF-8 but utf-16: read it with encoding=\"utf-16\")",
			"| name\tcity\n    | Zoë\tMünchen",
		}},
		{"utf8.csv", []byte("a,b\n1,é\n"), []string{"(9 bytes, CSV table)\n"}},
		{"blob.dat", []byte("PK\x03\x04\x00\x00binary"), []string{"(12 bytes, data file)"}},
	} {
		got := describe([]InputFile{{File: sandbox.File{Name: tc.name, Data: tc.data}}}, nil)
		for _, want := range tc.want {
			if !strings.Contains(got, want) {
				t.Errorf("%s: description lacks %q:\n%s", tc.name, want, got)
			}
		}
	}
}

// TestDescribeWorkbookRows: an Excel preview shows the first sheet's first
// rows, with shared, rich-text and inline strings, and cells in their
// columns.
func TestDescribeWorkbookRows(t *testing.T) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, body := range map[string]string{
		"xl/workbook.xml": `<?xml version="1.0"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">` +
			`<sheets><sheet name="Data" sheetId="1" r:id="rId7"/><sheet name="Other" sheetId="2" r:id="rId8"/></sheets></workbook>`,
		"xl/_rels/workbook.xml.rels": `<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId8" Target="worksheets/other.xml"/><Relationship Id="rId7" Target="/xl/worksheets/data.xml"/></Relationships>`,
		"xl/sharedStrings.xml": `<?xml version="1.0"?><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">` +
			`<si><t>city</t></si><si><r><t>pop</t></r><r><t>ulation</t></r></si><si><t>Zürich</t><rPh><t>zu</t></rPh></si></sst>`,
		"xl/worksheets/data.xml": `<?xml version="1.0"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>` +
			`<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c></row>` +
			`<row r="2"><c r="A2" t="s"><v>2</v></c><c r="B2"><v>421878</v></c><c r="D2" t="inlineStr"><is><t>note</t></is></c><c r="E2" t="b"><v>1</v></c></row>` +
			`</sheetData></worksheet>`,
		"xl/worksheets/other.xml": `<worksheet><sheetData><row><c t="inlineStr"><is><t>wrong sheet</t></is></c></row></sheetData></worksheet>`,
	} {
		w, _ := zw.Create(name)
		io.WriteString(w, body)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	got := describe([]InputFile{{File: sandbox.File{Name: "cities.xlsx", Data: buf.Bytes()}}}, nil)
	want := `    sheets: "Data", "Other"
    first rows of "Data" (cells as stored; dates are day numbers):
    | city | population
    | Zürich | 421878 |  | note | TRUE`
	if !strings.Contains(got, want) {
		t.Errorf("description:\n%s\nwant:\n%s", got, want)
	}
}

// describe is DescribeFiles without its caps.
func describe(files []InputFile, notes []string) string {
	desc, _ := DescribeFiles(context.Background(), files, notes)
	return desc
}
