package vercel

import (
	"bytes"
	"encoding/json"
)

func lastLine(b []byte) []byte {
	b = bytes.TrimRight(b, "\n")
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		return b[i+1:]
	}
	return b
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(bytes.TrimSpace(b), v) }
