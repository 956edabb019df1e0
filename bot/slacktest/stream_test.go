package slacktest_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/sandpiper-bot/sandpiper/bot/slacktest"
)

// TestFakeStreamsAsSlackDoes: chat.startStream/appendStream/stopStream in
// the fake need what Slack needs and keep a stream's state, so that a
// bot test can fail as it would against Slack.
func TestFakeStreamsAsSlackDoes(t *testing.T) {
	fake := slacktest.New(t)
	api := slack.New(slacktest.BotToken, slack.OptionAPIURL(fake.URL))
	ctx := context.Background()
	_, root, err := api.PostMessageContext(ctx, "C0MATH", slack.MsgOptionText("question", false))
	if err != nil {
		t.Fatal(err)
	}
	_, dmRoot, _ := api.PostMessageContext(ctx, "D0ALICE", slack.MsgOptionText("question", false))
	md := slack.MsgOptionMarkdownText
	to := []slack.MsgOption{slack.MsgOptionRecipientUserID("U0ALICE"), slack.MsgOptionRecipientTeamID(slacktest.TeamID)}
	start := func(channel string, opts ...slack.MsgOption) (string, error) {
		_, ts, err := api.StartStreamContext(ctx, channel, opts...)
		return ts, err
	}
	code := func(err error) string {
		if se, ok := errors.AsType[slack.SlackErrorResponse](err); ok {
			return se.Err
		}
		if err != nil {
			return err.Error()
		}
		return ""
	}
	check := func(what string, err error, want string) {
		t.Helper()
		if got := code(err); got != want {
			t.Errorf("%s: error %q, want %q", what, got, want)
		}
	}

	_, err = start("C0MATH", slack.MsgOptionTS(root), md("hi"))
	check("channel stream without recipient", err, "invalid_arguments")
	_, err = start("C0MATH", append(to, md("hi"))...)
	check("stream without thread_ts", err, "invalid_arguments")
	_, err = start("C0MATH", append(to, slack.MsgOptionTS(root), md(strings.Repeat("x", slacktest.StreamCallChars+1)))...)
	check("markdown_text over the limit", err, "msg_too_long")
	_, err = start("C0MATH", append(to, slack.MsgOptionTS(root), slack.MsgOptionChunks(slack.PlanUpdateChunk{Type: "nonsense"}))...)
	check("unknown chunk", err, "invalid_chunks")
	_, err = start("D0ALICE", slack.MsgOptionTS(dmRoot), md("no recipient needed in a DM"))
	check("DM stream", err, "")

	ts, err := start("C0MATH", append(to, slack.MsgOptionTS(root), slack.MsgOptionChunks(slack.NewMarkdownTextChunk("Hello")))...)
	check("channel stream", err, "")
	_, _, err = api.AppendStreamContext(ctx, "C0MATH", ts, md(", world"))
	check("append", err, "")
	_, _, err = api.AppendStreamContext(ctx, "C0MATH", "1.000001", md("x"))
	check("append to an unknown ts", err, "message_not_found")
	_, _, err = api.AppendStreamContext(ctx, "C0MATH", ts, md(strings.Repeat("x", slacktest.StreamMessageChars)))
	check("append past the message's limit", err, "msg_too_long")
	_, _, err = api.StopStreamContext(ctx, "C0MATH", ts, md("."), slack.MsgOptionBlocks(dividers(51)...))
	check("stop with 51 blocks", err, "invalid_blocks")
	_, _, err = api.StopStreamContext(ctx, "C0MATH", ts, md("."), slack.MsgOptionBlocks(slack.NewDividerBlock()))
	check("stop", err, "")
	_, _, err = api.AppendStreamContext(ctx, "C0MATH", ts, md("late"))
	check("append after stop", err, "message_not_in_streaming_state")
	_, _, err = api.StopStreamContext(ctx, "C0MATH", ts)
	check("stop twice", err, "message_not_in_streaming_state")

	var m slacktest.Message
	for _, x := range fake.Thread("C0MATH", root) {
		if x.TS == ts {
			m = x
		}
	}
	if !m.Streamed || m.Streaming || m.Text != "Hello, world." || m.Recipient != "U0ALICE" || m.RecipientTeam != slacktest.TeamID || m.Appends != 1 {
		t.Errorf("stream stored as %+v", m)
	}

	// Refusal and rate limits.
	fake.RefuseStreaming("channel_type_not_supported")
	_, err = start("D0ALICE", slack.MsgOptionTS(dmRoot), md("x"))
	check("refused", err, "channel_type_not_supported")
	fake.RefuseStreaming("")
	ts, _ = start("D0ALICE", slack.MsgOptionTS(dmRoot), md("x"))
	fake.RateLimit("chat.appendStream", 1, time.Minute, 2*time.Second)
	_, _, err = api.AppendStreamContext(ctx, "D0ALICE", ts, md("1"))
	check("first append", err, "")
	_, _, err = api.AppendStreamContext(ctx, "D0ALICE", ts, md("2"))
	if rl, ok := errors.AsType[*slack.RateLimitedError](err); !ok || rl.RetryAfter != 2*time.Second {
		t.Errorf("second append: %v, want 429 with Retry-After: 2", err)
	}
	if fake.RateLimited("chat.appendStream") != 1 {
		t.Errorf("RateLimited = %d", fake.RateLimited("chat.appendStream"))
	}
}

func dividers(n int) []slack.Block {
	var bs []slack.Block
	for range n {
		bs = append(bs, slack.NewDividerBlock())
	}
	return bs
}
