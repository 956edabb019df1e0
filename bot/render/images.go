package render

import (
	"bytes"
	"encoding/binary"
	"encoding/xml"
	"fmt"
	"hash/crc32"
	"io"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/sandpiper-bot/sandpiper/sandbox/safetext"
)

// IsImage reports whether Slack shows a file as an image.
func IsImage(name string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg":
		return true
	}
	return false
}

// AltText describes an image for people who cannot see it: the title or
// description the program saved in it (matplotlib's savefig metadata), or
// what it is and what it was made for. It is one line of plain text,
// neutralised ([safetext.Line]): the program chose the metadata and the
// name.
func AltText(name string, data []byte, run int, question string) string {
	var t string
	switch strings.ToLower(path.Ext(name)) {
	case ".png":
		t = pngText(data, "Title", "Description")
	case ".svg":
		t = svgTitle(data)
	}
	t = strings.Join(strings.Fields(t), " ")
	if t == "" {
		q := strings.Join(strings.Fields(question), " ")
		t = fmt.Sprintf("Image %s, made by Python run %d for the question: %s", path.Base(name), run, q)
	}
	return Truncate(safetext.Line(t), altTextChars)
}

// pngText returns the first of keys found in a PNG's tEXt or iTXt chunks.
func pngText(data []byte, keys ...string) string {
	const sig = "\x89PNG\r\n\x1a\n"
	if !bytes.HasPrefix(data, []byte(sig)) {
		return ""
	}
	found := map[string]string{}
	p := data[len(sig):]
	for len(p) >= 12 {
		n := binary.BigEndian.Uint32(p[:4])
		typ := string(p[4:8])
		if uint64(n) > uint64(len(p)-12) {
			break
		}
		body := p[8 : 8+n]
		if crc32.ChecksumIEEE(p[4:8+n]) != binary.BigEndian.Uint32(p[8+n:12+n]) {
			break
		}
		switch typ {
		case "tEXt": // keyword NUL latin-1 text
			if k, v, ok := bytes.Cut(body, []byte{0}); ok {
				found[string(k)] = latin1(v)
			}
		case "iTXt": // keyword NUL flag method lang NUL translated NUL text
			if k, rest, ok := bytes.Cut(body, []byte{0}); ok && len(rest) >= 2 && rest[0] == 0 {
				parts := bytes.SplitN(rest[2:], []byte{0}, 3)
				if len(parts) == 3 && utf8.Valid(parts[2]) {
					found[string(k)] = string(parts[2])
				}
			}
		case "IEND":
			p = nil
			continue
		}
		p = p[12+n:]
	}
	for _, k := range keys {
		if v := found[k]; strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}

func latin1(b []byte) string {
	r := make([]rune, len(b))
	for i, c := range b {
		r[i] = rune(c)
	}
	return string(r)
}

// svgTitle returns the text of an SVG's first title element (matplotlib
// writes metadata={'Title': …} as dc:title).
func svgTitle(data []byte) string {
	d := xml.NewDecoder(io.LimitReader(bytes.NewReader(data), 1<<20))
	d.Strict = false
	for {
		tok, err := d.Token()
		if err != nil {
			return ""
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "title" {
			var s string
			if d.DecodeElement(&s, &se) == nil && strings.TrimSpace(s) != "" {
				return s
			}
		}
	}
}
