package config

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestBotLogQuotesControls: the bot's log lines name files and quote
// errors a program chose; the handler quotes them, so no escape
// sequence, C1 control or bidi override reaches an operator's terminal.
func TestBotLogQuotesControls(t *testing.T) {
	var b bytes.Buffer
	log, err := Bot{LogLevel: "info"}.Logger(&b)
	if err != nil {
		t.Fatal(err)
	}
	hostile := "\x1b]52;c;cm0=\x07\x1b[2J\u009b\x9b\u202eexe.txt"
	log.Warn("file "+hostile, "file", hostile, "err", errors.New(hostile), hostile, []string{hostile})
	if i := strings.IndexFunc(b.String(), func(r rune) bool {
		return r < 0x20 && r != '\n' || r >= 0x7f && r <= 0x9f || r >= 0x202a && r <= 0x202e
	}); i >= 0 || !utf8.ValidString(b.String()) {
		t.Errorf("log line holds a control at %d: %q", i, &b)
	}
}
