package answer

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/bot/internal/slackapi"
	"github.com/sandpiper-bot/sandpiper/bot/render"
	"github.com/sandpiper-bot/sandpiper/bot/thread"
	"github.com/sandpiper-bot/sandpiper/sandbox"
	"github.com/sandpiper-bot/sandpiper/sandbox/safetext"
)

// runInputs are the files an answer's runs start with.
type runInputs struct {
	files   []agent.InputFile
	notes   []string // for the model: files left out, and why
	refused []string // for the person: their attachments left out, and why (mrkdwn)
	// refusedEarlier: some of refused were attached earlier in the thread.
	refusedEarlier bool
}

// candidate is a file the answer's runs could get.
type candidate struct {
	ref     thread.FileRef // a Slack file, when entry is not set
	entry   *thread.Entry
	current bool // attached to the question being answered
	output  bool // written by a run
	turnTS  string
}

// gatherFiles collects the files for an answer's runs in ws, the
// thread's workspace: those attached to the question first, then the files
// earlier runs in the thread wrote and earlier attachments, newest first,
// within the per-run limits. Slack files are downloaded (with the bot
// token, on this host) once into the workspace.
func (a *Answerer) gatherFiles(ctx context.Context, m Question, history []thread.Turn, foreign []thread.FileRef, ws *thread.Workspace, log *slog.Logger) *runInputs {
	in := &runInputs{}
	lim := a.lim.Files
	if len(m.Files) == 0 && len(foreign) == 0 && !a.workspaces.Exists(m.Channel, m.ThreadTS) && !slices.ContainsFunc(history, func(t thread.Turn) bool {
		return len(t.Files)+len(t.Outputs) > 0
	}) {
		return in // a thread without files: no workspace until a run writes one
	}
	if err := ws.Open(); err != nil {
		log.Error("opening the thread's workspace failed", "err", err)
		for _, r := range m.Files {
			in.refused = append(in.refused, fmt.Sprintf("%s: I could not store it (%s)", fileLabel(r.Name), render.Escape(userError(err))))
		}
		return in
	}

	var cands []candidate
	seen := map[string]bool{} // Slack file ids
	for _, r := range m.Files {
		seen[r.ID] = true
		cands = append(cands, candidate{ref: r, current: true, turnTS: m.TS})
	}
	for _, e := range ws.Entries() {
		if seen[e.SlackID] && e.SlackID != "" || sandbox.HiddenPath(e.Name) {
			continue // attached again with this question, or a run's cache
		}
		seen[e.SlackID], seen[e.Posted] = true, true
		cands = append(cands, candidate{entry: &e, output: e.Output, turnTS: e.TurnTS})
	}
	for i := len(history) - 1; i >= 0; i-- {
		t := history[i]
		for _, r := range t.Outputs {
			if !seen[r.ID] {
				seen[r.ID] = true
				cands = append(cands, candidate{ref: r, output: true, turnTS: t.TS})
			}
		}
		for _, r := range t.Files {
			if !seen[r.ID] {
				seen[r.ID] = true
				cands = append(cands, candidate{ref: r, turnTS: t.TS})
			}
		}
	}
	for i := len(foreign) - 1; i >= 0; i-- {
		if r := foreign[i]; !seen[r.ID] {
			seen[r.ID] = true
			cands = append(cands, candidate{ref: r})
		}
	}

	var total int64
	placed := map[string]bool{}
	for _, c := range cands {
		f, problem := a.place(ctx, ws, c, lim, total, len(in.files), placed)
		if problem != "" {
			name := c.ref.Name
			if c.entry != nil {
				name = c.entry.Name
			}
			in.notes = append(in.notes, fmt.Sprintf("%s: %s", safetext.Line(name), problem))
			// Say so in the thread: for the question's own files, and once
			// for a file attached earlier in the thread.
			if c.current || (c.entry == nil && c.ref.ID != "" && a.refused.Add(c.ref.ID, true, 0) == nil) {
				in.refused = append(in.refused, fmt.Sprintf("%s: %s", fileLabel(name), problem))
				in.refusedEarlier = in.refusedEarlier || !c.current
				a.metrics.files.WithLabelValues("refused").Inc()
			}
			log.Info("file left out of the run", "file", name, "slack_id", c.ref.ID, "why", problem)
			continue
		}
		total += int64(len(f.Data))
		placed[f.Name] = true
		in.files = append(in.files, f)
		ws.AddRun(f.Name)
	}
	return in
}

// place reads one candidate, downloading it into the workspace when
// needed, or says why it cannot be placed.
func (a *Answerer) place(ctx context.Context, ws *thread.Workspace, c candidate, lim sandbox.FileLimits, total int64, count int, placed map[string]bool) (agent.InputFile, string) {
	if c.entry == nil && !c.ref.Complete() {
		f, _, _, err := a.fileAPI.GetFileInfoContext(ctx, c.ref.ID, 0, 0)
		if err != nil {
			return agent.InputFile{}, fmt.Sprintf("I could not look it up in Slack (%s)", render.Escape(slackapi.Explain(err).Error()))
		}
		r := thread.RefOf(*f)
		if c.output {
			r.Name = c.ref.Name // the path the run wrote
		}
		c.ref = r
	}
	size := c.ref.Size
	if c.entry != nil {
		size = c.entry.Size
	} else if why := unusable(c.ref); why != "" {
		return agent.InputFile{}, why
	}
	switch {
	case size > lim.FileSize:
		return agent.InputFile{}, fmt.Sprintf("it is %s, more than the %s I read per file", sandbox.FormatSize(size), sandbox.FormatSize(lim.FileSize))
	case count >= lim.RunFiles:
		return agent.InputFile{}, fmt.Sprintf("a run gets at most %d files, and newer ones came first", lim.RunFiles)
	case total+size > lim.RunSize:
		return agent.InputFile{}, fmt.Sprintf("a run gets at most %s of files, and newer ones came first", sandbox.FormatSize(lim.RunSize))
	}

	source := "attached earlier in this thread"
	switch {
	case c.current:
		source = "attached to this message"
	case c.output:
		source = "written by a run of an earlier answer in this thread"
	}
	e := c.entry
	if e == nil {
		if have, ok := ws.BySlackID(c.ref.ID); ok {
			e = &have
		}
	}
	if e != nil {
		data, err := ws.Read(e.Name)
		if err == nil {
			if placed[e.Name] {
				return agent.InputFile{}, "another file of the same name came first"
			}
			return agent.InputFile{File: sandbox.File{Name: e.Name, Data: data}, Source: source}, ""
		}
		if c.entry != nil { // nothing to download it from
			return agent.InputFile{}, "it is no longer in the thread's workspace"
		}
	}

	data, err := a.download(ctx, c.ref, lim.FileSize)
	switch {
	case errors.Is(err, errTooLarge):
		return agent.InputFile{}, fmt.Sprintf("it is more than the %s I read per file", sandbox.FormatSize(lim.FileSize))
	case err != nil:
		return agent.InputFile{}, fmt.Sprintf("I could not download it (%s)", render.Escape(userError(err)))
	case total+int64(len(data)) > lim.RunSize:
		return agent.InputFile{}, fmt.Sprintf("a run gets at most %s of files, and newer ones came first", sandbox.FormatSize(lim.RunSize))
	}
	a.metrics.files.WithLabelValues("downloaded").Inc()
	entry := thread.Entry{TurnTS: c.turnTS}
	if c.output && filepath.IsLocal(c.ref.Name) && !placed[c.ref.Name] {
		entry.Name, entry.Output, entry.Posted = c.ref.Name, true, c.ref.ID
	} else {
		entry.Name = sandbox.UniqueName(sandbox.SafeName(c.ref.Name, c.ref.Filetype), func(n string) bool { return placed[n] || ws.Taken(n) })
		entry.SlackID = c.ref.ID
	}
	keep := make([]string, 0, len(placed))
	for n := range placed {
		keep = append(keep, n)
	}
	if _, err := ws.Store(entry, data, keep...); err != nil {
		a.log.Error("storing a file in the thread's workspace failed", "file", entry.Name, "err", err)
		return agent.InputFile{}, fmt.Sprintf("I could not store it (%s)", render.Escape(userError(err)))
	}
	return agent.InputFile{File: sandbox.File{Name: entry.Name, Data: data}, Source: source}, ""
}

// fileLabel shows a file name from Slack, or one a run wrote, in mrkdwn,
// on one line and neutralised ([safetext.Line]).
func fileLabel(name string) string {
	name = strings.ReplaceAll(safetext.Line(name), "`", "'")
	if name == "" {
		name = "a file"
	}
	return "`" + render.Escape(render.Truncate(name, 100)) + "`"
}

// refusedText is the notice for attachments the bot cannot use.
func refusedText(refused []string, earlier bool) string {
	var b strings.Builder
	where := "you attached"
	if earlier {
		where = "in this thread"
	}
	if len(refused) == 1 {
		fmt.Fprintf(&b, ":warning: I can't use one of the files %s:\n", where)
	} else {
		fmt.Fprintf(&b, ":warning: I can't use %d of the files %s:\n", len(refused), where)
	}
	for _, r := range refused[:min(len(refused), 10)] {
		b.WriteString("• " + r + "\n")
	}
	if len(refused) > 10 {
		fmt.Fprintf(&b, "• … and %d more\n", len(refused)-10)
	}
	b.WriteString("I'll answer with what I have.")
	return b.String()
}

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
func (a *Answerer) download(ctx context.Context, r thread.FileRef, max int64) ([]byte, error) {
	if r.URL == "" {
		f, _, _, err := a.fileAPI.GetFileInfoContext(ctx, r.ID, 0, 0)
		if err != nil {
			return nil, fmt.Errorf("files.info %s: %w", r.ID, slackapi.Explain(err))
		}
		r = thread.RefOf(*f)
		if r.URL == "" {
			return nil, fmt.Errorf("files.info %s: no download URL", r.ID)
		}
	}
	w := &limitWriter{n: max}
	if err := a.fileAPI.GetFileContext(ctx, r.URL, w); err != nil {
		if errors.Is(err, errTooLarge) {
			return nil, errTooLarge
		}
		return nil, fmt.Errorf("downloading %s: %w", r.ID, slackapi.Explain(err))
	}
	return w.buf.Bytes(), nil
}
