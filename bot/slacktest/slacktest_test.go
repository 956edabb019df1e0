package slacktest_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"github.com/sandpiper-bot/sandpiper/bot/slacktest"
)

// TestFakeRefusesWhatSlackRefuses: the methods the bot uses for Stop and
// the agent view fail in the fake the way Slack documents, so that a bot
// test can fail as it would against Slack.
func TestFakeRefusesWhatSlackRefuses(t *testing.T) {
	fake := slacktest.New(t)
	api := slack.New(slacktest.BotToken, slack.OptionAPIURL(fake.URL))
	ctx := context.Background()
	_, root, err := api.PostMessageContext(ctx, "D0ALICE", slack.MsgOptionText("hi", false))
	if err != nil {
		t.Fatal(err)
	}
	prompt := slack.AssistantThreadsPrompt{Title: "Math", Message: "What is 6*7?"}
	button := func(text, value string) slack.MsgOption {
		return slack.MsgOptionBlocks(slack.NewActionBlock("", slack.NewButtonBlockElement("a", value, slack.NewTextBlockObject(slack.PlainTextType, text, false, false))))
	}

	for _, tc := range []struct {
		name string
		call func() error
		want string // the Slack error code; "" for success
	}{
		{"prompts", func() error {
			return api.SetAssistantThreadsSuggestedPromptsContext(ctx, slack.AssistantThreadsSetSuggestedPromptsParameters{ChannelID: "D0ALICE", ThreadTS: root, Prompts: []slack.AssistantThreadsPrompt{prompt}})
		}, ""},
		{"prompts without a thread (agent view)", func() error {
			return api.SetAssistantThreadsSuggestedPromptsContext(ctx, slack.AssistantThreadsSetSuggestedPromptsParameters{ChannelID: "D0ALICE", Prompts: []slack.AssistantThreadsPrompt{prompt}})
		}, ""},
		{"prompts without a channel", func() error {
			return api.SetAssistantThreadsSuggestedPromptsContext(ctx, slack.AssistantThreadsSetSuggestedPromptsParameters{ThreadTS: root, Prompts: []slack.AssistantThreadsPrompt{prompt}})
		}, "invalid_arguments"},
		{"no prompts", func() error {
			return api.SetAssistantThreadsSuggestedPromptsContext(ctx, slack.AssistantThreadsSetSuggestedPromptsParameters{ChannelID: "D0ALICE", ThreadTS: root})
		}, "invalid_arguments"},
		{"five prompts", func() error {
			return api.SetAssistantThreadsSuggestedPromptsContext(ctx, slack.AssistantThreadsSetSuggestedPromptsParameters{ChannelID: "D0ALICE", ThreadTS: root,
				Prompts: []slack.AssistantThreadsPrompt{prompt, prompt, prompt, prompt, prompt}})
		}, "invalid_arguments"},
		{"a prompt without a message", func() error {
			return api.SetAssistantThreadsSuggestedPromptsContext(ctx, slack.AssistantThreadsSetSuggestedPromptsParameters{ChannelID: "D0ALICE", ThreadTS: root,
				Prompts: []slack.AssistantThreadsPrompt{{Title: "Math"}}})
		}, "invalid_arguments"},
		{"prompts on a thread that is not there", func() error {
			return api.SetAssistantThreadsSuggestedPromptsContext(ctx, slack.AssistantThreadsSetSuggestedPromptsParameters{ChannelID: "D0ALICE", ThreadTS: "1.000001", Prompts: []slack.AssistantThreadsPrompt{prompt}})
		}, "invalid_thread_ts"},
		{"title", func() error {
			return api.SetAssistantThreadsTitleContext(ctx, slack.AssistantThreadsSetTitleParameters{ChannelID: "D0ALICE", ThreadTS: root, Title: "Math"})
		}, ""},
		{"title without a thread", func() error {
			return api.SetAssistantThreadsTitleContext(ctx, slack.AssistantThreadsSetTitleParameters{ChannelID: "D0ALICE", Title: "Math"})
		}, "invalid_arguments"},
		{"empty title", func() error {
			return api.SetAssistantThreadsTitleContext(ctx, slack.AssistantThreadsSetTitleParameters{ChannelID: "D0ALICE", ThreadTS: root})
		}, "invalid_arguments"},
		{"ephemeral without a user", func() error {
			_, err := api.PostEphemeralContext(ctx, "D0ALICE", "", slack.MsgOptionText("psst", false))
			return err
		}, "invalid_arguments"},
		{"a button", func() error {
			_, _, err := api.PostMessageContext(ctx, "C0MATH", slack.MsgOptionText("x", false), button("Stop", "v"))
			return err
		}, ""},
		{"a button with 76 characters of text", func() error {
			_, _, err := api.PostMessageContext(ctx, "C0MATH", slack.MsgOptionText("x", false), button(strings.Repeat("x", 76), "v"))
			return err
		}, "invalid_blocks"},
		{"a button with a 2001-character value", func() error {
			_, _, err := api.PostMessageContext(ctx, "C0MATH", slack.MsgOptionText("x", false), button("Stop", strings.Repeat("v", 2001)))
			return err
		}, "invalid_blocks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			var se slack.SlackErrorResponse
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("error %v, want success", err)
			case tc.want != "" && (!errors.As(err, &se) || se.Err != tc.want):
				t.Errorf("error %v, want %s", err, tc.want)
			}
		})
	}

	// Without assistant:write the agent view's methods fail as Slack's do;
	// the status still works with chat:write.
	fake.SetScopes("chat:write")
	err = api.SetAssistantThreadsTitleContext(ctx, slack.AssistantThreadsSetTitleParameters{ChannelID: "D0ALICE", ThreadTS: root, Title: "Math"})
	if se, ok := errors.AsType[slack.SlackErrorResponse](err); !ok || se.Err != "missing_scope" || se.Needed != "assistant:write" {
		t.Errorf("setTitle without the scope: %v (%+v)", err, se)
	}
	if err := api.SetAssistantThreadsStatusContext(ctx, slack.AssistantThreadsSetStatusParameters{ChannelID: "D0ALICE", ThreadTS: root, Status: "is thinking…"}); err != nil {
		t.Errorf("setStatus with chat:write: %v", err)
	}
	if got := fake.Title("D0ALICE", root); got != "Math" {
		t.Errorf("title = %q", got)
	}
}
