package thread

import "github.com/slack-go/slack"

// FileRef is a file in Slack that the bot may read into a run: a human's
// attachment, or one of the bot's uploads of a file a run wrote.
type FileRef struct {
	ID       string `json:"id"`
	Name     string `json:"name"` // as Slack has it (attachments), or the path the run wrote (outputs)
	Size     int64  `json:"size,omitempty"`
	Mimetype string `json:"-"`
	Filetype string `json:"-"`
	Mode     string `json:"-"`
	External bool   `json:"-"`
	URL      string `json:"-"` // url_private_download or url_private
	User     string `json:"-"` // who shared it
}

// RefOf reduces Slack's file object to what the bot needs.
func RefOf(f slack.File) FileRef {
	u := f.URLPrivateDownload
	if u == "" {
		u = f.URLPrivate
	}
	return FileRef{
		ID: f.ID, Name: f.Name, Size: int64(f.Size), Mimetype: f.Mimetype, Filetype: f.Filetype,
		Mode: f.Mode, External: f.IsExternal, URL: u, User: f.User,
	}
}

// RefsOf is [RefOf] of each file Slack sent whole enough to have an ID.
func RefsOf(files []slack.File) []FileRef {
	var out []FileRef
	for _, f := range files {
		if f.ID != "" {
			out = append(out, RefOf(f))
		}
	}
	return out
}

// Complete reports whether Slack sent the whole file object; some events
// carry only the id (file_access "check_file_info").
func (r FileRef) Complete() bool {
	return r.Name != "" && (r.URL != "" || r.External || r.Mode != "hosted" && r.Mode != "")
}
