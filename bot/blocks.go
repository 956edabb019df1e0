package bot

import (
	"errors"
	"regexp"

	"github.com/slack-go/slack"
)

// Message metadata event types; they let a restarted bot recognise its own
// messages when it rebuilds a thread from conversations.replies.
const (
	metaToolRun = "sandpiper_tool_run"
	metaAnswer  = "sandpiper_answer"
	metaNotice  = "sandpiper_notice"
)

// metaTable marks a message showing a CSV a run wrote as a table.
const metaTable = "sandpiper_table"

// metaCommentary marks a message holding what the model wrote before a
// tool call: it stands before that call's card.
const metaCommentary = "sandpiper_commentary"

func contextBlock(text string) slack.Block {
	return slack.NewContextBlock("", slack.NewTextBlockObject(slack.MarkdownType, text, false, false))
}

// actionStop is the action_id of a running tool card's Stop button.
const actionStop = "sandpiper_stop"

// reSlackID matches a channel or user ID, as safe to show in mrkdwn.
var reSlackID = regexp.MustCompile(`^[A-Z][A-Z0-9]{2,20}$`)

// isSlackID reports whether s looks like a channel or user ID.
func isSlackID(s string) bool { return reSlackID.MatchString(s) }

// userMention shows a user ID as a mention; anything else as "someone".
func userMention(id string) string {
	if !reSlackID.MatchString(id) {
		return "someone"
	}
	return "<@" + id + ">"
}

// errInterrupted is the end of a run whose bot stopped while it ran.
var errInterrupted = errors.New("the bot running this code stopped before it finished")

// producedFile is a file a run wrote, as its card shows it. Name and
// Note are plain text, as the program and the sandbox gave them: the card
// neutralises and escapes them when it shows them.
type producedFile struct {
	Name   string // path relative to /mnt/data
	Size   int64
	Image  bool
	Posted bool   // uploaded into the thread by this run
	ID     string // the upload's Slack file id
	Note   string // what happened to it when it was not posted
}
