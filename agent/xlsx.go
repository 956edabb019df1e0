package agent

import (
	"archive/zip"
	"bytes"
	"encoding/xml"
	"io"
	"path"
	"strconv"
	"strings"
)

// xmlPartLimit bounds how much of one part of a workbook is read.
const xmlPartLimit = 8 << 20

// workbook is what a preview shows of an Excel file.
type workbook struct {
	sheets []string   // names, in order
	rows   [][]string // the first rows of the first sheet
}

// readWorkbook reads an .xlsx file's sheet names and the first maxRows
// rows of its first sheet, with the standard library: workbook.xml, its
// relationships, the shared strings and the sheet, read as a stream.
// What it cannot read is left out.
func readWorkbook(data []byte, maxRows int) workbook {
	var wb workbook
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return wb
	}
	parts := map[string]*zip.File{}
	for _, f := range zr.File {
		parts[f.Name] = f
	}
	var book struct {
		Sheets []struct {
			Name string `xml:"name,attr"`
			RID  string `xml:"http://schemas.openxmlformats.org/officeDocument/2006/relationships id,attr"`
		} `xml:"sheets>sheet"`
	}
	if decodePart(parts["xl/workbook.xml"], &book) != nil || len(book.Sheets) == 0 {
		return wb
	}
	for _, s := range book.Sheets {
		wb.sheets = append(wb.sheets, s.Name)
	}
	var rels struct {
		Rels []struct {
			ID     string `xml:"Id,attr"`
			Target string `xml:"Target,attr"`
		} `xml:"Relationship"`
	}
	decodePart(parts["xl/_rels/workbook.xml.rels"], &rels)
	sheet := ""
	for _, r := range rels.Rels {
		if r.ID == book.Sheets[0].RID {
			sheet = r.Target
			if strings.HasPrefix(sheet, "/") {
				sheet = strings.TrimPrefix(sheet, "/")
			} else {
				sheet = path.Join("xl", sheet)
			}
		}
	}
	if sheet == "" {
		sheet = "xl/worksheets/sheet1.xml"
	}
	wb.rows = readRows(parts[sheet], sharedStrings(parts["xl/sharedStrings.xml"]), maxRows)
	return wb
}

// openPart returns a decoder for a part of the workbook, reading at most
// xmlPartLimit bytes, and the part to close.
func openPart(f *zip.File) (*xml.Decoder, io.Closer, error) {
	if f == nil {
		return nil, nil, io.ErrUnexpectedEOF
	}
	rc, err := f.Open()
	if err != nil {
		return nil, nil, err
	}
	return xml.NewDecoder(io.LimitReader(rc, xmlPartLimit)), rc, nil
}

func decodePart(f *zip.File, v any) error {
	d, c, err := openPart(f)
	if err != nil {
		return err
	}
	defer c.Close()
	return d.Decode(v)
}

// sharedStrings reads the workbook's string table: the text of each <si>,
// rich-text runs joined.
func sharedStrings(f *zip.File) []string {
	d, c, err := openPart(f)
	if err != nil {
		return nil
	}
	defer c.Close()
	var out []string
	var cur strings.Builder
	inT := false
	for {
		tok, err := d.Token()
		if err != nil {
			return out
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "si":
				cur.Reset()
			case "t":
				inT = true
			case "rPh": // phonetic hints are not part of the text
				d.Skip()
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "si":
				out = append(out, cur.String())
			case "t":
				inT = false
			}
		case xml.CharData:
			if inT {
				cur.Write(t)
			}
		}
	}
}

// readRows reads the first maxRows rows of a sheet, each cell where its
// reference (B3) puts it.
func readRows(f *zip.File, strs []string, maxRows int) [][]string {
	d, c, err := openPart(f)
	if err != nil {
		return nil
	}
	defer c.Close()
	var rows [][]string
	var row []string
	var cellType, cellRef string
	var val strings.Builder
	inVal := false
	for {
		tok, err := d.Token()
		if err != nil {
			return rows
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "row":
				row = nil
			case "c":
				cellType, cellRef = "", ""
				for _, a := range t.Attr {
					switch a.Name.Local {
					case "t":
						cellType = a.Value
					case "r":
						cellRef = a.Value
					}
				}
				val.Reset()
			case "v", "t":
				inVal = true
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "v", "t":
				inVal = false
			case "c":
				v := val.String()
				switch cellType {
				case "s":
					if i, err := strconv.Atoi(v); err == nil && i >= 0 && i < len(strs) {
						v = strs[i]
					}
				case "b":
					v = map[string]string{"0": "FALSE", "1": "TRUE"}[v]
				}
				if col := column(cellRef); col >= len(row) && col < 1000 {
					row = append(row, make([]string, col-len(row))...)
				}
				row = append(row, v)
			case "row":
				rows = append(rows, row)
				if len(rows) == maxRows {
					return rows
				}
			}
		case xml.CharData:
			if inVal {
				val.Write(t)
			}
		}
	}
}

// column returns the zero-based column of a cell reference ("C7" → 2),
// or -1.
func column(ref string) int {
	n := 0
	for i, c := range ref {
		if c < 'A' || c > 'Z' {
			if i == 0 {
				return -1
			}
			break
		}
		n = n*26 + int(c-'A'+1)
	}
	return n - 1
}
