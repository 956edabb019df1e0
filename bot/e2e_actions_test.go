package bot_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/sandpiper-bot/sandpiper/bot"
	"github.com/sandpiper-bot/sandpiper/bot/slacktest"
)

// TestButtonClickReachesItsHandler: a block_actions envelope is acked and
// handed, with where and by whom it was clicked, to the handler
// registered for its action_id, which can answer the clicker alone.
func TestButtonClickReachesItsHandler(t *testing.T) {
	h := newHarness(t)
	q := h.post("C0MATH", "U0ALICE", "just talking", "")
	api := slack.New(slacktest.BotToken, slack.OptionAPIURL(h.slack.URL))
	_, ts, err := api.PostMessage("C0MATH", slack.MsgOptionTS(q.TS), slack.MsgOptionText("buttons", false),
		slack.MsgOptionBlocks(slack.NewActionBlock("acts",
			slack.NewButtonBlockElement("probe", "v-42", slack.NewTextBlockObject(slack.PlainTextType, "Probe", false, false)),
			slack.NewButtonBlockElement("unhandled", "x", slack.NewTextBlockObject(slack.PlainTextType, "Nothing", false, false)),
		)))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan bot.Action, 1)
	h.bot.HandleAction("probe", func(ctx context.Context, a bot.Action) {
		got <- a
		h.bot.Ephemeral(ctx, a.Channel, a.User, a.ThreadTS, "seen "+a.Value)
	})

	// An element the bot has no handler for is acked and dropped.
	env, err := h.slack.ClickButton(slacktest.Click{Channel: "C0MATH", MessageTS: ts, User: "U0BOB", ActionID: "unhandled"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := h.slack.WaitAck(env, 5*time.Second); !ok {
		t.Fatal("click not acked")
	}
	env, err = h.slack.ClickButton(slacktest.Click{Channel: "C0MATH", MessageTS: ts, User: "U0BOB", ActionID: "probe"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := h.slack.WaitAck(env, 5*time.Second); !ok {
		t.Fatal("click not acked")
	}
	var a bot.Action
	select {
	case a = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("handler not called")
	}
	want := bot.Action{ActionID: "probe", BlockID: "acts", Type: "button", Value: "v-42", User: "U0BOB", Team: slacktest.TeamID,
		Channel: "C0MATH", MessageTS: ts, ThreadTS: q.TS, ResponseURL: a.ResponseURL, TriggerID: a.TriggerID}
	if a != want || a.ResponseURL == "" || a.TriggerID == "" {
		t.Errorf("action = %+v\nwant %+v with a response URL and a trigger id", a, want)
	}
	msgs, ok := h.slack.WaitThread("C0MATH", q.TS, 10*time.Second, func(ms []slacktest.Message) bool {
		for _, m := range ms {
			if m.Ephemeral && m.EphemeralTo == "U0BOB" && strings.Contains(m.Text, "seen v-42") {
				return true
			}
		}
		return false
	})
	if !ok {
		t.Errorf("no ephemeral reply to the clicker in the thread:\n%s", dump(msgs))
	}

	// Only what a message shows can be clicked.
	if _, err := h.slack.ClickButton(slacktest.Click{Channel: "C0MATH", MessageTS: ts, User: "U0BOB", ActionID: "absent"}); err == nil {
		t.Error("the fake let a test click an element the message does not have")
	}
}

// TestFooterBlocksEndTheAnswer: the blocks of the bot's footer functions
// end the answer's last message, and each gets the answer's info: where
// it is, who asked, what was asked and answered, and what the runs
// printed.
func TestFooterBlocksEndTheAnswer(t *testing.T) {
	h := newHarness(t)
	got := make(chan bot.AnswerInfo, 1)
	h.bot.AddFooter(func(ctx context.Context, ans bot.AnswerInfo) []slack.Block {
		got <- ans
		return []slack.Block{slack.NewContextBlock("probe-footer", slack.NewTextBlockObject(slack.MarkdownType, "footer probe", false, false))}
	})
	d := h.post("C0MATH", "U0ALICE", mention+"compute 6*7", "")
	msgs := h.waitReplies("C0MATH", d.TS, 1)
	answers := botMessages(msgs, isAnswer)
	if len(answers) != 1 {
		t.Fatalf("want one answer:\n%s", dump(msgs))
	}
	var blocks []struct {
		BlockID string `json:"block_id"`
	}
	if err := json.Unmarshal(answers[0].Blocks, &blocks); err != nil || len(blocks) == 0 {
		t.Fatalf("answer blocks %s: %v", answers[0].Blocks, err)
	}
	if last := blocks[len(blocks)-1].BlockID; last != "probe-footer" {
		t.Errorf("last block of the answer = %q, want the footer's:\n%s", last, answers[0].Blocks)
	}
	ans := <-got
	if ans.Channel != "C0MATH" || ans.ThreadTS != d.TS || ans.QuestionTS != d.TS || ans.Asker != "U0ALICE" || ans.Team != slacktest.TeamID {
		t.Errorf("footer info places the answer wrongly: %+v", ans)
	}
	if ans.Question != "compute 6*7" || !strings.Contains(ans.Answer, "42") {
		t.Errorf("footer info question %q answer %q", ans.Question, ans.Answer)
	}
	if len(ans.Runs) != 1 || ans.Runs[0].Code != "print(6*7)" || strings.TrimSpace(ans.Runs[0].Stdout) != "42" || ans.Runs[0].Err != nil {
		t.Errorf("footer info runs = %+v, want the one run printing 42", ans.Runs)
	}
}
