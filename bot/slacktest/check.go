package slacktest

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/slack-go/slack"
)

// UnsafeRune returns the first rune of s that Slack must not be given
// raw, and its index, or -1: C0 controls but line feed and tab, DEL, C1
// controls, bidi embeddings, overrides and isolates, invalid UTF-8.
func UnsafeRune(s string) (rune, int) {
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\ufffd"):
			return r, i
		case r < 0x20 && r != '\n' && r != '\t', r == 0x7f, r >= 0x80 && r <= 0x9f,
			r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return r, i
		}
	}
	return -1, -1
}

// JSONStrings returns the strings in a decoded JSON value, keys included.
func JSONStrings(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			out = append(out, JSONStrings(e)...)
		}
		return out
	case map[string]any:
		var out []string
		for k, e := range v {
			out = append(out, k)
			out = append(out, JSONStrings(e)...)
		}
		return out
	}
	return nil
}

// CheckBlocks applies the fake's checks of Block Kit (Slack's documented
// shapes and limits) to blocks, and returns Slack's refusal as an error,
// or nil: what a chat.postMessage of them would get.
func CheckBlocks(blocks []slack.Block) error {
	raw, err := json.Marshal(blocks)
	if err != nil {
		return err
	}
	return refusal(checkBlocks(string(raw)))
}

// CheckChunks applies the fake's checks of stream chunks to chunks, as
// a chat.appendStream of them would get them.
func CheckChunks(chunks ...slack.StreamChunk) error {
	raw, err := json.Marshal(chunks)
	if err != nil {
		return err
	}
	_, _, e := streamChunks(url.Values{"chunks": {string(raw)}})
	return refusal(e)
}

func refusal(e map[string]any) error {
	if e == nil {
		return nil
	}
	return fmt.Errorf("%v: %v", e["error"], e["response_metadata"])
}
