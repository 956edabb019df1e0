package bot

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/sandpiper-bot/sandpiper/bot/internal/slackapi"
	"github.com/sandpiper-bot/sandpiper/bot/thread"
)

// refusedTypes are kinds Python in the sandbox has no use for.
var refusedTypes = map[string]string{
	".mp4": "a video", ".mov": "a video", ".avi": "a video", ".mkv": "a video", ".webm": "a video",
	".mp3": "an audio file", ".m4a": "an audio file", ".ogg": "an audio file", ".flac": "an audio file",
	".exe": "a program", ".dmg": "a disk image", ".iso": "a disk image", ".msi": "an installer", ".apk": "an app package",
	".key": "a Keynote deck", ".pages": "a Pages document", ".numbers": "a Numbers spreadsheet (export it as CSV or Excel)",
	".docx": "a Word document", ".doc": "a Word document", ".pptx": "a PowerPoint deck", ".ppt": "a PowerPoint deck",
}

// supportedKinds says, for people, what the bot can read.
const supportedKinds = "CSV, TSV, Excel, JSON, text, Parquet, SQLite, zip and image files"

// unusable says why the bot cannot use a file, or "" when it can.
func unusable(r thread.FileRef) string {
	ext := strings.ToLower(path.Ext(r.Name))
	switch {
	case r.External:
		return "it is stored outside Slack; download it and attach the file itself"
	case r.Mode == "tombstone":
		return "it was deleted"
	case r.Mode == "post" || r.Mode == "space" || r.Filetype == "quip" || r.Filetype == "canvas" || r.Filetype == "list" || r.Filetype == "email":
		kind := map[string]string{"quip": "canvas", "canvas": "canvas", "list": "list", "email": "email"}[r.Filetype]
		return "it is a Slack " + cmp.Or(kind, "post") + ", not a data file; export it as CSV or Excel and attach that"
	case refusedTypes[ext] != "":
		return fmt.Sprintf("it is %s, which Python here cannot use; I read %s", refusedTypes[ext], supportedKinds)
	case strings.HasPrefix(r.Mimetype, "video/"), strings.HasPrefix(r.Mimetype, "audio/"):
		return fmt.Sprintf("it is %s, which Python here cannot use; I read %s", strings.TrimSuffix(r.Mimetype, "/*"), supportedKinds)
	}
	// Anything else may be data a program can read (.h5, .dta, .nc …).
	return ""
}

// errTooLarge is returned by a download that passed its size limit.
var errTooLarge = errors.New("file too large")

// limitWriter fails a write past n bytes, which aborts the download.
type limitWriter struct {
	buf bytes.Buffer
	n   int64
}

func (w *limitWriter) Write(p []byte) (int, error) {
	if int64(w.buf.Len()+len(p)) > w.n {
		return 0, errTooLarge
	}
	return w.buf.Write(p)
}

// download fetches a file's bytes with the bot token, at most max bytes.
// A ref without a download URL is looked up with files.info first.
func (b *Bot) download(ctx context.Context, r thread.FileRef, max int64) ([]byte, error) {
	if r.URL == "" {
		f, _, _, err := b.fileAPI.GetFileInfoContext(ctx, r.ID, 0, 0)
		if err != nil {
			return nil, fmt.Errorf("files.info %s: %w", r.ID, slackapi.Explain(err))
		}
		r = thread.RefOf(*f)
		if r.URL == "" {
			return nil, fmt.Errorf("files.info %s: no download URL", r.ID)
		}
	}
	w := &limitWriter{n: max}
	if err := b.fileAPI.GetFileContext(ctx, r.URL, w); err != nil {
		if errors.Is(err, errTooLarge) {
			return nil, errTooLarge
		}
		return nil, fmt.Errorf("downloading %s: %w", r.ID, slackapi.Explain(err))
	}
	return w.buf.Bytes(), nil
}
