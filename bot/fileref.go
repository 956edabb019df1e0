package bot

import "github.com/slack-go/slack"

// fileRef is a file in Slack that the bot may read into a run: a human's
// attachment, or one of the bot's uploads of a file a run wrote.
type fileRef struct {
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

// refOf reduces Slack's file object to what the bot needs.
func refOf(f slack.File) fileRef {
	u := f.URLPrivateDownload
	if u == "" {
		u = f.URLPrivate
	}
	return fileRef{
		ID: f.ID, Name: f.Name, Size: int64(f.Size), Mimetype: f.Mimetype, Filetype: f.Filetype,
		Mode: f.Mode, External: f.IsExternal, URL: u, User: f.User,
	}
}

func refsOf(files []slack.File) []fileRef {
	var out []fileRef
	for _, f := range files {
		if f.ID != "" {
			out = append(out, refOf(f))
		}
	}
	return out
}

// complete reports whether Slack sent the whole file object; some events
// carry only the id (file_access "check_file_info").
func (r fileRef) complete() bool {
	return r.Name != "" && (r.URL != "" || r.External || r.Mode != "hosted" && r.Mode != "")
}
