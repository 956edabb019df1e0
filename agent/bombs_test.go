package agent

// Generators of the worst files a preview may meet: small on disk, huge or
// hostile inside. A zip part is written as deflate back-references by
// hand, without compressing, so that a part inflating to a gigabyte costs
// the test next to nothing to build, even with the race detector.

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image"
	"image/png"
	"math/bits"
	"strconv"
	"strings"
	"testing"
)

// seg is s repeated n times.
type seg struct {
	s string
	n int
}

// zipPart is one entry of a generated zip: its segments, in order.
type zipPart struct {
	name string
	segs []seg
	// size, when set, is the uncompressed size the directory declares
	// instead of the true one.
	size uint64
}

// part is a zip entry made of segs.
func part(name string, segs ...seg) zipPart { return zipPart{name: name, segs: segs} }

// once is s, once.
func once(s string) seg { return seg{s, 1} }

// makeZip writes parts, deflated, into a zip.
func makeZip(tb testing.TB, parts ...zipPart) []byte {
	tb.Helper()
	var out, dir bytes.Buffer
	for _, p := range parts {
		data, crc, size := deflateSegs(tb, p.segs)
		if p.size != 0 {
			size = p.size
		}
		offset := out.Len()
		// Local header: version 20, no flags, deflate, no time.
		le(&out, uint32(0x04034b50), uint16(20), uint16(0), uint16(8), uint32(0),
			crc, uint32(len(data)), uint32(min(size, 0xffffffff)), uint16(len(p.name)), uint16(0))
		out.WriteString(p.name)
		out.Write(data)
		writeDirEntry(&dir, p.name, crc, uint32(len(data)), uint32(min(size, 0xffffffff)), uint32(offset))
	}
	return endZip(&out, &dir, len(parts))
}

// le writes vs (each a uint16 or a uint32), little-endian.
func le(w *bytes.Buffer, vs ...any) {
	var b []byte
	for _, v := range vs {
		switch v := v.(type) {
		case uint16:
			b = binary.LittleEndian.AppendUint16(b, v)
		case uint32:
			b = binary.LittleEndian.AppendUint32(b, v)
		default:
			panic(fmt.Sprintf("le: %T", v))
		}
	}
	w.Write(b)
}

// writeDirEntry writes a central directory record.
func writeDirEntry(dir *bytes.Buffer, name string, crc, csize, size, offset uint32) {
	var h [46]byte
	binary.LittleEndian.PutUint32(h[0:], 0x02014b50)
	binary.LittleEndian.PutUint16(h[4:], 20) // made by
	binary.LittleEndian.PutUint16(h[6:], 20) // needed
	binary.LittleEndian.PutUint16(h[10:], 8) // deflate
	binary.LittleEndian.PutUint32(h[16:], crc)
	binary.LittleEndian.PutUint32(h[20:], csize)
	binary.LittleEndian.PutUint32(h[24:], size)
	binary.LittleEndian.PutUint16(h[28:], uint16(len(name)))
	binary.LittleEndian.PutUint32(h[42:], offset)
	dir.Write(h[:])
	dir.WriteString(name)
}

// endZip appends the directory and its end record (the count as zip
// keeps it: modulo 65536) to out.
func endZip(out, dir *bytes.Buffer, n int) []byte {
	offset := out.Len()
	out.Write(dir.Bytes())
	le(out, uint32(0x06054b50), uint16(0), uint16(0), uint16(n), uint16(n),
		uint32(dir.Len()), uint32(offset), uint16(0))
	return out.Bytes()
}

// deflateSegs returns the raw deflate stream of segs, their CRC-32 and
// their size. Each segment's s is compressed once; its repeats are a
// fixed-Huffman block of back-references to it, 258 bytes per 13 bits.
func deflateSegs(tb testing.TB, segs []seg) (data []byte, crc uint32, size uint64) {
	var out bytes.Buffer
	for _, sg := range segs {
		if sg.n <= 0 || sg.s == "" {
			continue
		}
		reps := sg.n - 1
		if len(sg.s) > 32<<10 || reps*len(sg.s) < 3 { // no back-reference reaches, or none is needed
			reps = 0
		}
		fw, _ := flate.NewWriter(&out, flate.BestSpeed)
		for range sg.n - reps {
			fw.Write([]byte(sg.s))
		}
		if err := fw.Flush(); err != nil { // a sync flush: byte-aligned, not final
			tb.Fatal(err)
		}
		if reps > 0 {
			backReferences(&out, reps*len(sg.s), len(sg.s))
		}
		crc = crcRepeat(crc, sg.s, sg.n)
		size += uint64(len(sg.s)) * uint64(sg.n)
	}
	out.Write([]byte{1, 0, 0, 0xff, 0xff}) // a final, empty stored block
	return out.Bytes(), crc, size
}

// crcRepeat updates crc with s repeated n times.
func crcRepeat(crc uint32, s string, n int) uint32 {
	chunk := []byte(strings.Repeat(s, max(1, min(n, (64<<10)/len(s)))))
	per := len(chunk) / len(s)
	for ; n >= per; n -= per {
		crc = crc32.Update(crc, crc32.IEEETable, chunk)
	}
	return crc32.Update(crc, crc32.IEEETable, chunk[:n*len(s)])
}

// bitWriter writes deflate's bits, least significant first.
type bitWriter struct {
	out *bytes.Buffer
	acc uint64
	n   uint
}

func (w *bitWriter) bits(v uint64, n uint) {
	w.acc |= v << w.n
	for w.n += n; w.n >= 8; w.n -= 8 {
		w.out.WriteByte(byte(w.acc))
		w.acc >>= 8
	}
}

// code writes a Huffman code of n bits, most significant first.
func (w *bitWriter) code(c uint64, n uint) { w.bits(bits.Reverse64(c)>>(64-n), n) }

// backReferences writes a fixed-Huffman block that copies total bytes at
// distance dist (at most 32 KiB), then an empty stored block that aligns
// the stream to a byte.
func backReferences(out *bytes.Buffer, total, dist int) {
	w := &bitWriter{out: out}
	w.bits(0b010, 3) // not final, fixed Huffman
	for total > 0 {
		l := min(total, 258)
		if total-l > 0 && total-l < 3 {
			l -= 3 // leave a copy of at least 3
		}
		total -= l
		c, extra, nextra := lengthCode(l)
		if c < 280 {
			w.code(uint64(c-256), 7)
		} else {
			w.code(uint64(c-280+0b11000000), 8)
		}
		w.bits(uint64(extra), nextra)
		d, dextra, dnextra := distanceCode(dist)
		w.code(uint64(d), 5)
		w.bits(uint64(dextra), dnextra)
	}
	w.code(0, 7)     // end of block
	w.bits(0b000, 3) // not final, stored
	if w.n > 0 {
		w.bits(0, 8-w.n)
	}
	out.Write([]byte{0, 0, 0xff, 0xff})
}

// Deflate's length and distance codes: the base of each, from the first
// code (257 for lengths, 0 for distances).
var (
	lengthBase = [...]int{3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258}
	distBase   = [...]int{1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577}
)

// lengthCode returns deflate's code for a copy of l bytes (3–258), and its
// extra bits.
func lengthCode(l int) (code, extra int, n uint) {
	i := len(lengthBase) - 1
	for lengthBase[i] > l {
		i--
	}
	if i >= 8 && i < 28 {
		n = uint(i/4 - 1)
	}
	return 257 + i, l - lengthBase[i], n
}

// distanceCode returns deflate's code for a distance (1–32768), and its
// extra bits.
func distanceCode(d int) (code, extra int, n uint) {
	i := len(distBase) - 1
	for distBase[i] > d {
		i--
	}
	if i >= 4 {
		n = uint(i/2 - 1)
	}
	return i, d - distBase[i], n
}

const (
	xlsxNS   = `xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"`
	bombBook = `<?xml version="1.0"?><workbook ` + xlsxNS + `><sheets><sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>`
	bombRels = `<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
		`<Relationship Id="rId1" Target="worksheets/sheet1.xml"/></Relationships>`
	sheetHead = `<worksheet ` + xlsxNS + `><sheetData>`
	sheetTail = `</sheetData></worksheet>`
	lateRow   = `<row><c t="inlineStr"><is><t>late</t></is></c></row>`
)

// workbookWith is a one-sheet workbook whose sheet and shared strings
// hold segs (none: no such part).
func workbookWith(tb testing.TB, sheet, sst []seg) []byte {
	parts := []zipPart{part("xl/workbook.xml", once(bombBook)), part("xl/_rels/workbook.xml.rels", once(bombRels))}
	if sst != nil {
		parts = append(parts, part("xl/sharedStrings.xml", sst...))
	}
	if sheet != nil {
		parts = append(parts, part("xl/worksheets/sheet1.xml", sheet...))
	}
	return makeZip(tb, parts...)
}

// sharedStringBomb is the workbook of the issue: one shared string of
// strBytes bytes, referenced by every one of rows×cells cells.
func sharedStringBomb(tb testing.TB, strBytes, rows, cells int) []byte {
	row := "<row>" + strings.Repeat(`<c t="s"><v>0</v></c>`, cells) + "</row>"
	return workbookWith(tb,
		[]seg{once(sheetHead), {row, rows}, once(sheetTail)},
		[]seg{once(`<sst ` + xlsxNS + `><si><t>`), {"A", strBytes}, once(`</t></si></sst>`)})
}

// deepBomb is a workbook whose every part nests depth elements.
func deepBomb(tb testing.TB, depth int) []byte {
	deep := []seg{once(`<?xml version="1.0"?>`), {"<a>", depth}}
	return makeZip(tb,
		part("xl/workbook.xml", deep...), part("xl/_rels/workbook.xml.rels", deep...),
		part("xl/sharedStrings.xml", deep...), part("xl/worksheets/sheet1.xml", deep...))
}

// deepSheetBomb is a valid workbook whose sheet nests depth elements in
// its first cell.
func deepSheetBomb(tb testing.TB, depth int) []byte {
	return workbookWith(tb, []seg{once(sheetHead + `<row><c t="inlineStr"><is>`), {"<t>", depth}}, nil)
}

// attributeBomb is a workbook whose sheet starts with elements of many
// attributes each, the costliest tokens encoding/xml decodes.
func attributeBomb(tb testing.TB, tags, attrsPerTag int) []byte {
	tag := "<x" + strings.Repeat(` a=""`, attrsPerTag) + "/>"
	return workbookWith(tb, []seg{once(sheetHead), {tag, tags}, once(lateRow + sheetTail)}, nil)
}

// tokenBomb is a workbook whose sheet holds n empty elements before its
// rows.
func tokenBomb(tb testing.TB, n int) []byte {
	return workbookWith(tb, []seg{once(sheetHead), {"<a/>", n}, once(lateRow + sheetTail)}, nil)
}

// wideBomb is a workbook whose rows hold cells at the far columns (up to
// XFD, the last, and past it) and cells more without references, which
// pad rows.
func wideBomb(tb testing.TB, rows, cells int) []byte {
	var row strings.Builder
	row.WriteString("<row>")
	for _, ref := range []string{"XFD", "ALL", "B", "XFC", "ZZZZZZZZZZZZZZ"} {
		fmt.Fprintf(&row, `<c r="%s1" t="inlineStr"><is><t>%s</t></is></c>`, ref, ref)
	}
	return workbookWith(tb, []seg{once(sheetHead), {row.String() + strings.Repeat(`<c><v>1</v></c>`, cells) + "</row>", rows}, once(sheetTail)}, nil)
}

// manySheetsBomb is a workbook of n sheets with long, hostile names.
func manySheetsBomb(tb testing.TB, n int) []byte {
	sheet := `<sheet name="` + strings.Repeat("&#x9b;2J&#x202e;\t", 200) + `" sheetId="1" r:id="rId1"/>`
	return makeZip(tb,
		part("xl/workbook.xml", once(`<?xml version="1.0"?><workbook `+xlsxNS+`><sheets>`), seg{sheet, n}, once(`</sheets></workbook>`)),
		part("xl/_rels/workbook.xml.rels", once(bombRels)))
}

// inflateBomb is a workbook whose sheet inflates to n bytes of
// whitespace before its first row: an honest zip bomb.
func inflateBomb(tb testing.TB, n int) []byte {
	return workbookWith(tb, []seg{once(sheetHead), {" ", n}, once(lateRow + sheetTail)}, nil)
}

// lyingZipBomb is a workbook whose sheet declares 4 GiB uncompressed in
// the zip directory.
func lyingZipBomb(tb testing.TB) []byte {
	sheet := part("xl/worksheets/sheet1.xml", once(sheetHead), seg{lateRow, 1000}, once(sheetTail))
	sheet.size = 1 << 40
	return makeZip(tb, part("xl/workbook.xml", once(bombBook)), part("xl/_rels/workbook.xml.rels", once(bombRels)), sheet)
}

// understatedBomb is a workbook whose sheet declares 1,000 bytes and
// inflates to 64 MiB.
func understatedBomb(tb testing.TB) []byte {
	sheet := part("xl/worksheets/sheet1.xml", once(sheetHead), seg{" ", 64 << 20}, once(lateRow+sheetTail))
	sheet.size = 1000
	return makeZip(tb, part("xl/workbook.xml", once(bombBook)), part("xl/_rels/workbook.xml.rels", once(bombRels)), sheet)
}

// cdataBomb is a workbook whose one shared string is a CDATA section of
// n bytes that alternate '<' and '>', which a tag guard cannot see as one
// long token.
func cdataBomb(tb testing.TB, n int) []byte {
	return workbookWith(tb,
		[]seg{once(sheetHead + `<row><c t="s"><v>0</v></c></row>` + sheetTail)},
		[]seg{once(`<sst ` + xlsxNS + `><si><t><![CDATA[`), {"<>", n / 2}, once(`]]></t></si></sst>`)})
}

// everyBudgetBomb is a workbook that spends every budget at once: each
// part starts with a CDATA section as large as its limit allows, and the
// shared strings go on with tags of many attributes.
func everyBudgetBomb(tb testing.TB) []byte {
	cdata := func(head string, n int, tail string) []seg {
		return []seg{once(head + "<x><![CDATA["), {"<>", n/2 - 256}, once("]]></x>" + tail)}
	}
	tag := "<x" + strings.Repeat(` a=""`, 3000) + "/>"
	return makeZip(tb,
		part("xl/workbook.xml", cdata(`<workbook `+xlsxNS+`>`, xlsxBookBytes, `<sheets><sheet name="S" r:id="rId1"/></sheets></workbook>`)...),
		part("xl/_rels/workbook.xml.rels", cdata(`<Relationships>`, xlsxBookBytes, `<Relationship Id="rId1" Target="worksheets/sheet1.xml"/></Relationships>`)...),
		part("xl/worksheets/sheet1.xml", cdata(`<worksheet>`, xlsxSheetBytes, `<sheetData><row><c t="s"><v>1</v></c></row></sheetData></worksheet>`)...),
		part("xl/sharedStrings.xml", append(cdata(`<sst>`, xlsxStringsBytes/2, ""), seg{tag, 1000}, once(`</sst>`))...))
}

// manyEntriesZip is an .xlsx of n empty zip entries: a central directory
// that is costly to decode. Only the directory is written: a reader of
// the directory looks no further.
func manyEntriesZip(n int) []byte {
	var out, dir bytes.Buffer
	dir.Grow(n * 52)
	for i := range n {
		writeDirEntry(&dir, strconv.Itoa(i), 0, 0, 0, 0)
	}
	return endZip(&out, &dir, n)
}

// pngWithChunk is a PNG of w×h pixels whose IHDR is preceded by a
// chunk declaring n bytes (of which only the first kilobyte is present),
// or, with n < 0, a 1×1 PNG whose IHDR declares w×h.
func pngWithChunk(tb testing.TB, n int64, w, h uint32) []byte {
	tb.Helper()
	var img bytes.Buffer
	if err := png.Encode(&img, image.NewGray(image.Rect(0, 0, 1, 1))); err != nil {
		tb.Fatal(err)
	}
	b := img.Bytes()
	ihdr := b[8 : 8+25]
	binary.BigEndian.PutUint32(ihdr[8:], w)
	binary.BigEndian.PutUint32(ihdr[12:], h)
	binary.BigEndian.PutUint32(ihdr[21:], crc32.ChecksumIEEE(ihdr[4:21]))
	if n < 0 {
		return b
	}
	var out bytes.Buffer
	out.Write(b[:8])
	binary.Write(&out, binary.BigEndian, uint32(n))
	out.WriteString("tEXt")
	out.Write(bytes.Repeat([]byte{'x'}, 1024))
	out.Write(b[8:])
	return out.Bytes()
}

// jpegWithSegments is the head of a JPEG that holds n APP1 segments of
// size bytes (at most 65535) before its frame header.
func jpegWithSegments(n, size int) []byte {
	var out bytes.Buffer
	out.Write([]byte{0xff, 0xd8})
	seg := append([]byte{0xff, 0xe1, byte(size >> 8), byte(size)}, bytes.Repeat([]byte{'x'}, size-2)...)
	for range n {
		out.Write(seg)
	}
	// SOF0: 8-bit, 4000×3000, one component; then the scan, where a
	// reader of the header stops.
	out.Write([]byte{0xff, 0xc0, 0, 11, 8, 0x0b, 0xb8, 0x0f, 0xa0, 1, 1, 0x11, 0})
	out.Write([]byte{0xff, 0xda, 0, 8, 1, 1, 0, 0, 0x3f, 0})
	return out.Bytes()
}

// gifHead is the head of a GIF of w×h pixels with a full colour table.
func gifHead(w, h uint16) []byte {
	b := []byte("GIF89a")
	b = binary.LittleEndian.AppendUint16(b, w)
	b = binary.LittleEndian.AppendUint16(b, h)
	b = append(b, 0xf7, 0, 0)
	return append(b, make([]byte, 3*256)...)
}

// utf16Garbage is n bytes after a UTF-16 byte-order mark: unpaired
// surrogates, a C1 control, a bidi override and line feeds.
func utf16Garbage(n int) []byte {
	pattern := []byte{0x00, 0xd8, 0x9b, 0x00, 0x0a, 0x00, 0x2e, 0x20, 0xff, 0xdf, 0x41, 0x00}
	return append([]byte{0xff, 0xfe}, bytes.Repeat(pattern, n/len(pattern)+1)...)[:n]
}
