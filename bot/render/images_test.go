package render

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"strings"
	"testing"
)

// pngWith is a PNG signature, a tEXt chunk and IEND: enough for pngText.
func pngWith(key, value string) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, body []byte) {
		binary.Write(&b, binary.BigEndian, uint32(len(body)))
		b.WriteString(typ)
		b.Write(body)
		binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(append([]byte(typ), body...)))
	}
	chunk("tEXt", []byte(key+"\x00"+value))
	chunk("IEND", nil)
	return b.Bytes()
}

func TestAltText(t *testing.T) {
	if got := AltText("chart.png", pngWith("Title", "Revenue by month"), 1, "q"); got != "Revenue by month" {
		t.Errorf("PNG title: %q", got)
	}
	if got := AltText("chart.png", pngWith("Software", "matplotlib"), 2, "plot the  revenue\nplease"); got != "Image chart.png, made by Python run 2 for the question: plot the revenue please" {
		t.Errorf("fallback: %q", got)
	}
	svg := `<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"><metadata><rdf:RDF><cc:Work><dc:title>Prices over time</dc:title></cc:Work></rdf:RDF></metadata></svg>`
	if got := AltText("out/p.svg", []byte(svg), 1, "q"); got != "Prices over time" {
		t.Errorf("SVG title: %q", got)
	}
	broken := pngWith("Title", "x")
	broken[len(broken)-20] ^= 0xff // a bad CRC: ignore the chunk
	if got := AltText("c.png", broken, 1, "q"); !strings.HasPrefix(got, "Image c.png") {
		t.Errorf("corrupt PNG: %q", got)
	}
	if got := AltText("c.png", pngWith("Title", strings.Repeat("x", 5000)), 1, "q"); len([]rune(got)) > altTextChars {
		t.Errorf("alt text of %d characters", len([]rune(got)))
	}
	// The program chose the title and the name: neutralised.
	if got := AltText("chart.png", pngWith("Title", "\x1b]0;pwned\x07Revenue\x9b\x7f"), 1, "q"); got != "␛]0;pwned␇Revenue\ufffd␡" {
		t.Errorf("PNG title with controls: %q", got)
	}
	if got := AltText("evil\u202egnp.png", pngWith("Software", "x"), 3, "why \x1b[2J?"); got != "Image evil\ufffdgnp.png, made by Python run 3 for the question: why ␛[2J?" {
		t.Errorf("fallback with controls: %q", got)
	}
}
