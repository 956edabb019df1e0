package answer

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/slack-go/slack"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/bot/internal/slackapi"
	"github.com/sandpiper-bot/sandpiper/bot/render"
	"github.com/sandpiper-bot/sandpiper/bot/thread"
	"github.com/sandpiper-bot/sandpiper/sandbox"
	"github.com/sandpiper-bot/sandpiper/sandbox/safetext"
)

// outgoing is a file to upload.
type outgoing struct {
	name string
	data []byte
	alt  string
	i    int // in the produced list
}

// deliver posts the files a run wrote into the thread in one message:
// images as images with alt text, other files as files, within the
// per-file and per-answer limits; a file the thread's workspace holds as
// the bot posted it before is not posted again. (The executeCode tool
// kept the files in the workspace.) It returns what the card should say
// about each file.
func (p *cardPoster) deliver(ctx context.Context, run int, res *sandbox.Result, charts []agent.Chart) ([]render.ProducedFile, []string) {
	lim := p.a.lim.Files
	plan := p.planCharts(run, charts)
	var out []render.ProducedFile
	var ups, held []outgoing // held: the PNGs of the charts shown natively
	for _, f := range res.Files {
		if sandbox.HiddenPath(f.Name) {
			continue
		}
		pf := render.ProducedFile{Name: f.Name, Size: int64(len(f.Data)), Image: render.IsImage(f.Name)}
		switch {
		case pf.Size > lim.FileSize:
			pf.Note = fmt.Sprintf("not posted or kept: larger than the %s limit per file", sandbox.FormatSize(lim.FileSize))
		case pf.Size == 0:
			pf.Note = "empty, not posted"
		case p.files.Posted(f) != "":
			pf.Note = "unchanged, posted before"
		case plan.native[f.Name] && pf.Image:
			pf.Note = "shown as a chart below"
			held = append(held, outgoing{name: f.Name, data: f.Data, alt: render.AltText(f.Name, f.Data, run, p.m.Text), i: len(out)})
		case p.uploads >= lim.Uploads:
			pf.Note = fmt.Sprintf("not posted: an answer posts at most %d files", lim.Uploads)
		default:
			p.uploads++
			var alt string
			if pf.Image {
				alt = render.AltText(f.Name, f.Data, run, p.m.Text)
			}
			ups = append(ups, outgoing{name: f.Name, data: f.Data, alt: alt, i: len(out)})
		}
		out = append(out, pf)
	}
	for _, o := range res.FilesOmitted {
		pf := render.ProducedFile{Name: o, Note: "not returned by the sandbox"}
		if name, why, ok := splitOmitted(o); ok {
			pf.Name, pf.Note = name, "not returned by the sandbox: "+why
		}
		if !sandbox.HiddenPath(pf.Name) {
			out = append(out, pf)
		}
	}
	defer func() {
		for _, f := range out {
			if f.Posted {
				p.a.metrics.files.WithLabelValues("posted").Inc()
			} else {
				p.a.metrics.files.WithLabelValues("not_posted").Inc()
			}
		}
	}()
	if len(plan.blocks) == 0 {
	} else if ts := p.postCharts(ctx, run, plan); ts != "" {
		// Their PNGs stay in the thread's workspace as shown: a later run
		// that leaves them unchanged does not post them.
		for _, h := range held {
			if err := p.files.SetPosted(sandbox.File{Name: h.name, Data: h.data}, "chart:"+ts); err != nil {
				p.log.Error("recording a chart in the thread's workspace failed", "file", h.name, "err", err)
			}
		}
	} else {
		// Slack refused the charts: their PNGs go with the other files.
		for _, h := range held {
			out[h.i].Note = ""
		}
		ups = append(ups, held...)
		plan.notes = append(plan.notes, "Slack refused the native charts; their images are posted")
	}
	if len(ups) == 0 {
		return out, plan.notes
	}
	ids, err := p.a.uploadFiles(ctx, p.m, fmt.Sprintf("From run %d:", run), ups)
	if err != nil {
		p.log.Error("posting a run's files failed", "run", run, "err", err)
		p.a.metrics.errors.WithLabelValues("slack").Inc()
		for _, u := range ups {
			out[u.i].Note = "not posted: Slack refused the upload (" + render.Truncate(userError(err), 120) + ")"
		}
		return out, plan.notes
	}
	for k, u := range ups {
		out[u.i].Posted, out[u.i].ID = true, ids[k]
		p.outputs = append(p.outputs, thread.FileRef{ID: ids[k], Name: u.name, Size: int64(len(u.data))})
		if err := p.files.SetPosted(sandbox.File{Name: u.name, Data: u.data}, ids[k]); err != nil {
			p.log.Error("recording a posted file in the thread's workspace failed", "file", u.name, "err", err)
		}
	}
	for _, u := range ups {
		if render.IsTableFile(u.name) && p.tables < answerTablesMax {
			p.postTable(ctx, run, u.name, u.data)
		}
	}
	return out, plan.notes
}

// chartPlan is what becomes of a run's charts: the data_visualization
// blocks of those Slack can draw (at most render.ChartsPerMessage), the
// PNGs they stand for, and why the others are their PNGs.
type chartPlan struct {
	blocks []slack.Block
	titles []string
	native map[string]bool // PNG name → shown natively
	notes  []string
}

func (p *cardPoster) planCharts(run int, charts []agent.Chart) chartPlan {
	plan := chartPlan{native: map[string]bool{}}
	for _, c := range charts {
		b, why := render.ChartBlock(c)
		if b != nil && len(plan.blocks) == render.ChartsPerMessage {
			b, why = nil, fmt.Sprintf("a message holds at most %d native charts", render.ChartsPerMessage)
		}
		if b == nil {
			name := cmp.Or(c.Image, c.Title, "a chart")
			plan.notes = append(plan.notes, fmt.Sprintf("%s is posted as an image: %s", name, why))
			p.log.Debug("a chart is posted as its image", "run", run, "chart", name, "why", why)
			continue
		}
		plan.blocks = append(plan.blocks, b)
		plan.titles = append(plan.titles, cmp.Or(c.Title, string(c.Kind)+" chart"))
		if c.Image != "" {
			plan.native[c.Image] = true
		}
	}
	return plan
}

// postCharts shows the charts of a run that Slack can draw in a message
// of their own; it returns the message's ts, "" when Slack refused it.
func (p *cardPoster) postCharts(ctx context.Context, run int, plan chartPlan) string {
	ctx, cancel := slackapi.Context(ctx)
	defer cancel()
	_, ts, err := p.a.api.PostMessageContext(ctx, p.m.Channel,
		slack.MsgOptionTS(p.m.ThreadTS),
		slack.MsgOptionText(render.ChartsFallback(plan.titles), false),
		slack.MsgOptionBlocks(plan.blocks...),
		slack.MsgOptionMetadata(slack.SlackMetadata{EventType: render.MetaChart, EventPayload: map[string]any{
			"question_ts": p.m.TS, "run": run,
		}}),
	)
	if err != nil {
		p.log.Warn("posting native charts failed; their images are posted", "run", run, "err", slackapi.Explain(err))
		p.a.metrics.errors.WithLabelValues("slack").Inc()
		return ""
	}
	return ts
}

// postTable shows a CSV a run wrote, just posted as a file, as a table
// in its own message: a data_table and a line naming the file. A file
// with no data row, or one Slack refuses, is left as the file.
func (p *cardPoster) postTable(ctx context.Context, run int, name string, data []byte) {
	t, ok := render.ReadTable(name, data)
	if !ok {
		return
	}
	p.tables++
	ctx, cancel := slackapi.Context(ctx)
	defer cancel()
	_, _, err := p.a.api.PostMessageContext(ctx, p.m.Channel,
		slack.MsgOptionTS(p.m.ThreadTS),
		slack.MsgOptionText(t.Fallback(), false),
		slack.MsgOptionBlocks(t.Blocks()...),
		slack.MsgOptionMetadata(slack.SlackMetadata{EventType: render.MetaTable, EventPayload: map[string]any{
			"question_ts": p.m.TS, "run": run, "file": render.Truncate(name, 200),
		}}),
	)
	if err != nil {
		p.log.Warn("posting a table failed; the file is posted", "run", run, "file", name, "err", slackapi.Explain(err))
		p.a.metrics.errors.WithLabelValues("slack").Inc()
	}
}

// splitOmitted splits an entry of [sandbox.Result.FilesOmitted] into the
// file's name and why it was left out: the sandbox says why in
// parentheses at the end, "link (not a regular file)". The last " (" is
// the sandbox's, since a name may hold one too.
func splitOmitted(o string) (name, why string, ok bool) {
	i := strings.LastIndex(o, " (")
	if i < 0 || !strings.HasSuffix(o, ")") {
		return o, "", false
	}
	return o[:i], strings.TrimSuffix(o[i+len(" ("):], ")"), true
}

// uploadFiles posts files into the thread as one message (files upload
// v2: an upload URL per file, the uploads, then one completion naming the
// thread). It returns the files' ids, in order. The names and titles Slack
// shows are neutralised ([safetext.Line]); the files' bytes are sent as
// the program wrote them.
func (a *Answerer) uploadFiles(ctx context.Context, m Question, comment string, files []outgoing) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, slackapi.FileTransferTimeout)
	defer cancel()
	var sums []slack.FileSummary
	for _, f := range files {
		name := safetext.Line(path.Base(f.name))
		u, err := a.fileAPI.GetUploadURLExternalContext(ctx, slack.GetUploadURLExternalParameters{FileName: name, FileSize: len(f.data), AltTxt: safetext.Line(f.alt)})
		if err != nil {
			return nil, fmt.Errorf("files.getUploadURLExternal %s: %w", name, slackapi.Explain(err))
		}
		if err := a.fileAPI.UploadToURL(ctx, slack.UploadToURLParameters{UploadURL: u.UploadURL, Reader: bytes.NewReader(f.data), Filename: name}); err != nil {
			return nil, fmt.Errorf("uploading %s: %w", name, slackapi.Explain(err))
		}
		// The title keeps the folder: out/a/x.csv and out/b/x.csv differ.
		sums = append(sums, slack.FileSummary{ID: u.FileID, Title: safetext.Line(f.name)})
	}
	_, err := a.fileAPI.CompleteUploadExternalContext(ctx, slack.CompleteUploadExternalParameters{
		Files: sums, Channel: m.Channel, ThreadTimestamp: m.ThreadTS, InitialComment: safetext.Text(comment),
	})
	if err != nil {
		return nil, fmt.Errorf("files.completeUploadExternal: %w", slackapi.Explain(err))
	}
	ids := make([]string, len(sums))
	for i, s := range sums {
		ids[i] = s.ID
	}
	return ids, nil
}
