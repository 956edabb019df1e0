package render

import (
	"errors"
	"regexp"

	"github.com/slack-go/slack"
)

// Message metadata event types; they let a restarted bot recognise its own
// messages when it rebuilds a thread from conversations.replies.
const (
	MetaToolRun = "sandpiper_tool_run"
	MetaAnswer  = "sandpiper_answer"
	MetaNotice  = "sandpiper_notice"
)

// MetaTable marks a message showing a CSV a run wrote as a table.
const MetaTable = "sandpiper_table"

// MetaCommentary marks a message holding what the model wrote before a
// tool call: it stands before that call's card.
const MetaCommentary = "sandpiper_commentary"

// ContextBlock is a context block holding mrkdwn text.
func ContextBlock(text string) slack.Block {
	return slack.NewContextBlock("", slack.NewTextBlockObject(slack.MarkdownType, text, false, false))
}

// StopActionID is the action_id of a running tool card's Stop button.
const StopActionID = "sandpiper_stop"

// reSlackID matches a channel or user ID, as safe to show in mrkdwn.
var reSlackID = regexp.MustCompile(`^[A-Z][A-Z0-9]{2,20}$`)

// IsSlackID reports whether s looks like a channel or user ID.
func IsSlackID(s string) bool { return reSlackID.MatchString(s) }

// UserMention shows a user ID as a mention; anything else as "someone".
func UserMention(id string) string {
	if !reSlackID.MatchString(id) {
		return "someone"
	}
	return "<@" + id + ">"
}

// ErrInterrupted is the end of a run whose bot stopped while it ran.
var ErrInterrupted = errors.New("the bot running this code stopped before it finished")

// ProducedFile is a file a run wrote, as its card shows it. Name and
// Note are plain text, as the program and the sandbox gave them: the card
// neutralises and escapes them when it shows them.
type ProducedFile struct {
	Name   string // path relative to /mnt/data
	Size   int64
	Image  bool
	Posted bool   // uploaded into the thread by this run
	ID     string // the upload's Slack file id
	Note   string // what happened to it when it was not posted
}

// MetaString returns a string field of a message's metadata, or "".
func MetaString(meta slack.SlackMetadata, key string) string {
	s, _ := meta.EventPayload[key].(string)
	return s
}
