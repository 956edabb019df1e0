package agent

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// workbook is what a preview shows of an Excel file.
type workbook struct {
	sheets     []string   // the first previewSheets names, cut and safe to show
	moreSheets int        // how many sheets follow those
	rows       [][]string // the first rows of the first sheet, cells cut and safe to show
}

// cell is a cell of a sheet as stored: its text, or the index of its
// shared string.
type cell struct {
	text string // cut to a cell's budget, not yet safe to show
	sst  int    // index in the shared strings, or -1
}

// readWorkbook reads an .xlsx file's sheet names and the first maxRows
// rows of its first sheet, with the standard library: workbook.xml, its
// relationships, the sheet and the shared strings it needs, each read as
// a stream within b. What it cannot read is left out.
func readWorkbook(data []byte, maxRows int, b *budget) workbook {
	var wb workbook
	zr := openZip(data, b)
	if zr == nil {
		return wb
	}
	rid := readSheetNames(openXMLPart(zr, "xl/workbook.xml", xlsxBookBytes, b), &wb)
	if len(wb.sheets) == 0 {
		return wb
	}
	sheet := sheetPath(openXMLPart(zr, "xl/_rels/workbook.xml.rels", xlsxBookBytes, b), rid)
	if sheet == "" {
		sheet = "xl/worksheets/sheet1.xml"
	}
	rows := readRows(openXMLPart(zr, sheet, xlsxSheetBytes, b), maxRows)
	want := map[int]string{}
	last := -1
	for _, row := range rows {
		for _, c := range row {
			if c.sst >= 0 {
				want[c.sst] = "…" // shown when the string cannot be read
				last = max(last, c.sst)
			}
		}
	}
	if last >= 0 {
		readSharedStrings(openXMLPart(zr, "xl/sharedStrings.xml", xlsxStringsBytes, b), want, last)
	}
	for _, row := range rows {
		shown := make([]string, len(row))
		for i, c := range row {
			text := c.text
			if c.sst >= 0 {
				text = want[c.sst]
			}
			shown[i], _ = cutLine(text, previewLineChars)
		}
		wb.rows = append(wb.rows, shown)
	}
	return wb
}

// errZipDirectory stops zip.NewReader at zipDirectoryBytes.
var errZipDirectory = errors.New("the zip directory is too large")

// budgetReaderAt fails once left bytes were read, while left >= 0.
type budgetReaderAt struct {
	r    *bytes.Reader
	left int64
}

func (r *budgetReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if r.left >= 0 {
		if int64(len(p)) > r.left {
			r.left = 0
			return 0, errZipDirectory
		}
		r.left -= int64(len(p))
	}
	return r.r.ReadAt(p, off)
}

// openZip opens data as a zip, decoding at most zipDirectoryBytes of its
// directory: zip.NewReader keeps every entry it finds there, and a 25 MiB
// file can list half a million.
func openZip(data []byte, b *budget) *zip.Reader {
	ra := &budgetReaderAt{r: bytes.NewReader(data), left: zipDirectoryBytes}
	zr, err := zip.NewReader(ra, int64(len(data)))
	if err != nil {
		if errors.Is(err, errZipDirectory) {
			b.fire(fmt.Sprintf("the zip directory is over %s", sandbox.FormatSize(zipDirectoryBytes)))
		}
		return nil
	}
	ra.left = -1 // the parts' reads are bounded by their limits
	return zr
}

// xmlPart reads one part of a workbook as XML tokens, within the
// preview's budget: a limit of decompressed bytes, tags of at most
// xmlTagBytes, elements nested at most xmlDepth deep, and the preview's
// tokens.
type xmlPart struct {
	d     *xml.Decoder
	rc    io.ReadCloser
	guard *xmlGuard
	b     *budget
	depth int
	n     int // tokens read
}

// errBudget ends a part whose reading hit a budget.
var errBudget = errors.New("preview budget reached")

// openXMLPart opens the part of zr named name, to read at most limit
// decompressed bytes of it, or returns nil (when it is missing, or
// declares a size no workbook has: a zip bomb).
func openXMLPart(zr *zip.Reader, name string, limit int64, b *budget) *xmlPart {
	var f *zip.File
	for _, e := range zr.File {
		if e.Name == name {
			f = e
			break
		}
	}
	if f == nil || b.ctx.Err() != nil {
		return nil
	}
	if f.UncompressedSize64 > xlsxEntryMax || f.UncompressedSize64 > deflateMaxRatio*f.CompressedSize64 {
		b.fire("a part of the file declares an impossible size (a zip bomb)")
		return nil
	}
	// The raw stream, inflated here, so that the guard stops at the size
	// the part declares: zip.File.Open would check that, and the
	// checksum, only at the end of the part, which a preview rarely
	// reaches.
	raw, err := f.OpenRaw()
	if err != nil {
		return nil
	}
	var rc io.ReadCloser
	switch f.Method {
	case zip.Store:
		rc = io.NopCloser(raw)
	case zip.Deflate:
		rc = flate.NewReader(raw)
	default:
		return nil // no workbook is written with another method
	}
	g := &xmlGuard{r: rc, limit: limit, left: min(limit, int64(f.UncompressedSize64)), lies: int64(f.UncompressedSize64) < limit}
	return &xmlPart{d: xml.NewDecoder(g), rc: rc, guard: g, b: b}
}

// next returns the next token, or an error at the end of the part, when
// it is malformed, or when it hits a budget (which it records). The
// token's bytes are valid until the next call.
func (p *xmlPart) next() (xml.Token, error) {
	tok, err := p.d.Token()
	if err != nil {
		if p.guard.err != nil {
			p.b.fire(p.guard.err.Error())
		}
		return nil, err
	}
	p.n++
	p.b.tokens--
	switch t := tok.(type) {
	case xml.StartElement:
		p.b.tokens -= len(t.Attr)
		if p.depth++; p.depth > xmlDepth {
			p.b.fire(fmt.Sprintf("XML nested deeper than %d elements", xmlDepth))
			return nil, errBudget
		}
	case xml.EndElement:
		p.depth--
	}
	if p.b.tokens < 0 {
		p.b.fire(fmt.Sprintf("more than %s XML tokens", commas(xmlTokens)))
		return nil, errBudget
	}
	if p.n%4096 == 0 && p.b.ctx.Err() != nil {
		p.b.fire("no complete preview: the answer ended first")
		return nil, errBudget
	}
	return tok, nil
}

func (p *xmlPart) close() {
	if p != nil {
		p.rc.Close()
	}
}

// xmlGuard passes at most limit bytes of a part to the XML decoder, and
// no more than the part declares; and no tag longer than xmlTagBytes:
// encoding/xml decodes a whole tag at once, and a tag of many short
// attributes costs thirty times its size.
type xmlGuard struct {
	r     io.Reader
	limit int64
	left  int64 // of limit, or of the declared size when lies
	lies  bool  // the part declares less than limit: more is a lie
	inTag bool
	quote byte // the quote of the attribute value being read, or 0
	tag   int  // bytes of the tag being read
	err   error
}

func (g *xmlGuard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	if g.left <= 0 {
		// Is there more? A part that ends here is whole.
		var one [1]byte
		if n, _ := io.ReadFull(g.r, one[:]); n == 0 {
			return 0, io.EOF
		}
		g.err = fmt.Errorf("a part of the file is over %s", sandbox.FormatSize(g.limit))
		if g.lies {
			g.err = errors.New("a part of the file holds more than it declares (a zip bomb)")
		}
		return 0, g.err
	}
	if int64(len(p)) > g.left {
		p = p[:g.left]
	}
	n, err := g.r.Read(p)
	for i, c := range p[:n] {
		switch {
		case g.quote != 0:
			if c == g.quote {
				g.quote = 0
			}
		case g.inTag:
			switch c {
			case '"', '\'':
				g.quote = c
			case '>':
				g.inTag = false
			}
		case c == '<':
			g.inTag, g.tag = true, 0
		}
		if g.inTag {
			if g.tag++; g.tag > xmlTagBytes {
				g.err = fmt.Errorf("an XML tag is over %s", sandbox.FormatSize(xmlTagBytes))
				g.left -= int64(i)
				return i, g.err
			}
		}
	}
	g.left -= int64(n)
	return n, err
}

// readSheetNames reads workbook.xml: it keeps the first previewSheets
// sheet names in wb and counts the others, and returns the first sheet's
// relationship id.
func readSheetNames(p *xmlPart, wb *workbook) (rid string) {
	if p == nil {
		return ""
	}
	defer p.close()
	n := 0
	for {
		tok, err := p.next()
		if err != nil {
			return rid
		}
		if t, ok := tok.(xml.EndElement); ok && t.Name.Local == "sheets" {
			return rid // what follows (defined names…) may be long
		}
		t, ok := tok.(xml.StartElement)
		if !ok || t.Name.Local != "sheet" {
			continue
		}
		var name, id string
		for _, a := range t.Attr {
			switch {
			case a.Name.Local == "name" && a.Name.Space == "":
				name = a.Value
			case a.Name.Local == "id" && a.Name.Space != "":
				id = a.Value // r:id, in the relationships namespace
			}
		}
		if n == 0 {
			rid = id
		}
		if n++; n <= previewSheets {
			shown, _ := cutLine(name, sheetNameChars)
			wb.sheets = append(wb.sheets, shown)
		} else {
			wb.moreSheets++
		}
	}
}

// sheetPath reads the workbook's relationships for the path of the part
// that rid names, or "".
func sheetPath(p *xmlPart, rid string) string {
	if p == nil || rid == "" {
		p.close()
		return ""
	}
	defer p.close()
	for {
		tok, err := p.next()
		if err != nil {
			return ""
		}
		t, ok := tok.(xml.StartElement)
		if !ok || t.Name.Local != "Relationship" {
			continue
		}
		target := attr(t, "Target")
		if attr(t, "Id") != rid {
			continue
		}
		if strings.HasPrefix(target, "/") {
			return strings.TrimPrefix(target, "/")
		}
		return path.Join("xl", target)
	}
}

// attr returns the value of t's last attribute of the local name, in any
// namespace, or "".
func attr(t xml.StartElement, local string) string {
	v := ""
	for _, a := range t.Attr {
		if a.Name.Local == local {
			v = a.Value
		}
	}
	return v
}

// cellText collects the text of a cell or string, keeping no more than a
// cell shows.
type cellText struct {
	b []byte
}

// maxCellBytes is what cellText keeps: enough for previewLineChars
// characters and the "…" that says there was more.
const maxCellBytes = (previewLineChars + 1) * utf8.UTFMax

func (c *cellText) reset() { c.b = c.b[:0] }

func (c *cellText) write(p []byte) {
	c.b = append(c.b, p[:min(len(p), maxCellBytes-len(c.b))]...)
}

func (c *cellText) String() string { return string(c.b) }

// readRows reads the first maxRows rows of a sheet, each cell where its
// reference (B3) puts it, at most previewCells cells a row.
func readRows(p *xmlPart, maxRows int) [][]cell {
	if p == nil {
		return nil
	}
	defer p.close()
	var rows [][]cell
	var row []cell
	var cellType, cellRef string
	var val cellText
	inVal, phonetic := false, 0
	for {
		tok, err := p.next()
		if err != nil {
			return rows
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "row":
				row = nil
			case "c":
				cellType, cellRef = attr(t, "t"), attr(t, "r")
				val.reset()
			case "v", "t":
				inVal = true
			case "rPh": // phonetic hints are not part of the text
				phonetic++
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "v", "t":
				inVal = false
			case "rPh":
				phonetic--
			case "c":
				c := cell{text: val.String(), sst: -1} // a cut text is longer than a line shows
				switch cellType {
				case "s":
					if i, err := strconv.Atoi(c.text); err == nil && i >= 0 {
						c.sst = i
					}
				case "b":
					c.text = map[string]string{"0": "FALSE", "1": "TRUE"}[c.text]
				}
				col := column(cellRef)
				if col >= previewCells {
					continue // past what a line shows
				}
				for len(row) < col {
					row = append(row, cell{sst: -1})
				}
				if len(row) < previewCells {
					row = append(row, c)
				}
			case "row":
				rows = append(rows, row)
				if len(rows) == maxRows {
					return rows
				}
			case "sheetData":
				return rows // what follows (merged cells, formats…) may be long
			}
		case xml.CharData:
			if inVal && phonetic == 0 {
				val.write(t)
			}
		}
	}
}

// readSharedStrings reads the workbook's string table as far as index
// last, and sets want[i], for each i in want, to the text of string i (its
// rich-text runs joined), cut to a cell's budget.
func readSharedStrings(p *xmlPart, want map[int]string, last int) {
	if p == nil {
		return
	}
	defer p.close()
	var cur cellText
	i, inT, phonetic := -1, false, 0
	for {
		tok, err := p.next()
		if err != nil {
			return
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "si":
				i++
				cur.reset()
			case "t":
				inT = true
			case "rPh":
				phonetic++
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "si":
				if _, ok := want[i]; ok {
					want[i] = cur.String() // a cut string is longer than a line shows
				}
				if i >= last {
					return
				}
			case "t":
				inT = false
			case "rPh":
				phonetic--
			}
		case xml.CharData:
			if _, ok := want[i]; ok && inT && phonetic == 0 {
				cur.write(t)
			}
		}
	}
}

// column returns the zero-based column of a cell reference ("C7" → 2), or
// -1 when there is none or it is past XFD, the last column.
func column(ref string) int {
	n := 0
	for i := 0; i < len(ref); i++ {
		c := ref[i]
		if c < 'A' || c > 'Z' {
			if i == 0 {
				return -1
			}
			break
		}
		if i == 3 {
			return -1
		}
		n = n*26 + int(c-'A'+1)
	}
	return n - 1
}
