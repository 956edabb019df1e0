package bot

import (
	"strings"
	"testing"
)

// TestHelpListsCommands: the help lists every command of the table, with
// its arguments and what it does, and how to type it.
func TestHelpListsCommands(t *testing.T) {
	help := helpText("<@U0BOT>")
	for _, c := range commands {
		line := "• <@U0BOT> " + c.usage() + " (or `/sandpiper " + c.name
		if c.slashOnly {
			line = "• `/sandpiper " + c.usage() + "`: "
		}
		if !strings.Contains(help, line) || !strings.Contains(help, c.help) {
			t.Errorf("the help lacks %q with %q:\n%s", line, c.help, help)
		}
	}
	if strings.Contains(help, "%!") {
		t.Errorf("the help has a formatting error:\n%s", help)
	}
}

// TestMentionCommands: a mention is a command when its words are one of
// the table's, with the arguments it takes; else it is a question.
func TestMentionCommands(t *testing.T) {
	for _, tt := range []struct {
		text string
		want string // the command; "" for a question
	}{
		{"", "help"},
		{"help", "help"},
		{"Help!", "help"},
		{"help me integrate x^2", ""},
		{"debug", "debug"},
		{"debug on", "debug"},
		{"State OFF.", "state"},
		{"state status", "state"},
		{"state of the art in sorting?", ""},
		{"debug this code", ""},
		{"feedback", ""}, // a slash command alone
		{"what is 2+2", ""},
	} {
		c := mentionCommand(strings.Fields(tt.text))
		got := ""
		if c != nil {
			got = c.name
		}
		if got != tt.want {
			t.Errorf("mention %q is command %q, want %q", tt.text, got, tt.want)
		}
	}
}

// TestCommandNames: every command has a name of one lower-case word,
// used once, and says what it does.
func TestCommandNames(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range commands {
		if c.name == "" || c.name != strings.ToLower(c.name) || strings.ContainsAny(c.name, " |") || seen[c.name] || c.help == "" || c.run == nil {
			t.Errorf("command %+v", c)
		}
		seen[c.name] = true
	}
}
