package answer

import (
	"strings"
	"testing"

	"github.com/sandpiper-bot/sandpiper/bot/thread"
)

func TestUnusable(t *testing.T) {
	for _, tt := range []struct {
		ref  thread.FileRef
		want string // substring; "" means usable
	}{
		{thread.FileRef{Name: "a.csv", Mode: "hosted"}, ""},
		{thread.FileRef{Name: "weird.h5", Mode: "hosted", Mimetype: "application/octet-stream"}, ""},
		{thread.FileRef{Name: "snippet", Mode: "snippet", Filetype: "python"}, ""},
		{thread.FileRef{Name: "clip.mp4", Mode: "hosted"}, "a video"},
		{thread.FileRef{Name: "voice", Mode: "hosted", Mimetype: "audio/webm"}, "audio/webm"},
		{thread.FileRef{Name: "sheet", External: true}, "stored outside Slack"},
		{thread.FileRef{Name: "gone.csv", Mode: "tombstone"}, "deleted"},
		{thread.FileRef{Name: "Plan", Mode: "hosted", Filetype: "canvas"}, "Slack canvas"},
		{thread.FileRef{Name: "Notes", Mode: "hosted", Filetype: "quip"}, "Slack canvas"},
		{thread.FileRef{Name: "Post", Mode: "post", Filetype: "post"}, "Slack post"},
		{thread.FileRef{Name: "memo.docx", Mode: "hosted"}, "a Word document"},
	} {
		got := unusable(tt.ref)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("unusable(%+v) = %q, want %q", tt.ref, got, tt.want)
		}
	}
}

func TestSplitOmitted(t *testing.T) {
	for _, tt := range []struct {
		in, name, why string
		ok            bool
	}{
		{"link (not a regular file)", "link", "not a regular file", true},
		{"a (1) (not a regular file)", "a (1)", "not a regular file", true},
		{"x (<!channel> (not kept for later runs: the working directory is full)", "x (<!channel>", "not kept for later runs: the working directory is full", true},
		{"plain", "plain", "", false},
		{"open (paren", "open (paren", "", false},
	} {
		name, why, ok := splitOmitted(tt.in)
		if name != tt.name || why != tt.why || ok != tt.ok {
			t.Errorf("splitOmitted(%q) = %q, %q, %v; want %q, %q, %v", tt.in, name, why, ok, tt.name, tt.why, tt.ok)
		}
	}
}
