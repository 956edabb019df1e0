package bot_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/sandpiper-bot/sandpiper/bot/slacktest"
)

// longScript makes "sleep a minute" a program that runs longer than the
// harness's sandbox timeout (30 s): a card that says "Stopped" (not
// "timeout") shows the run was killed by the stop.
func longScript(q string) (string, bool) {
	if strings.Contains(q, "sleep a minute") {
		return "import time\nprint('started', flush=True)\ntime.sleep(60)\nprint('woke')", true
	}
	return defaultScript(q)
}

const stopAction = "sandpiper_stop"

// waitRunningCard waits for the thread's running card and returns it.
func (h *harness) waitRunningCard(channel, ts string) slacktest.Message {
	h.t.Helper()
	return runningCard(h.t, h.slack, channel, ts, nil)
}

// runningCard waits for the running card in a thread of fake and returns
// it; a failure shows the thread, and what more says if more is not nil.
func runningCard(t testing.TB, fake *slacktest.Server, channel, ts string, more func() string) slacktest.Message {
	t.Helper()
	var card slacktest.Message
	msgs, ok := fake.WaitThread(channel, ts, 20*time.Second, func(ms []slacktest.Message) bool {
		for _, m := range ms {
			if isCard(m) && strings.Contains(m.Visible(), "Running Python") {
				card = m
				return true
			}
		}
		return false
	})
	if !ok {
		extra := ""
		if more != nil {
			extra = "\n" + more()
		}
		t.Fatalf("no running card:\n%s%s", dump(msgs), extra)
	}
	return card
}

// click clicks the Stop button of a card as user and waits for the ack.
func (h *harness) click(channel, ts, user, actionID string) time.Time {
	h.t.Helper()
	at := time.Now()
	env, err := h.slack.ClickButton(slacktest.Click{Channel: channel, MessageTS: ts, User: user, ActionID: actionID})
	if err != nil {
		h.t.Fatal(err)
	}
	if _, ok := h.slack.WaitAck(env, 5*time.Second); !ok {
		h.t.Fatal("click not acked")
	}
	return at
}

// waitStopped waits until the thread's card says it was stopped and the
// thread has the bot's word on it, and returns the thread.
func (h *harness) waitStopped(channel, ts string) []slacktest.Message {
	h.t.Helper()
	msgs, ok := h.slack.WaitThread(channel, ts, 20*time.Second, func(ms []slacktest.Message) bool {
		stopped, noticed := false, false
		for _, m := range ms {
			stopped = stopped || isCard(m) && strings.Contains(m.Visible(), "Stopped")
			noticed = noticed || isNotice(m) && strings.Contains(m.Visible(), "stopped this answer")
		}
		return stopped && noticed
	})
	if !ok {
		h.t.Fatalf("the answer was not stopped:\n%s", dump(msgs))
	}
	return msgs
}

// ephemeralTo returns the ephemeral messages user got in a thread.
func (h *harness) waitEphemeral(channel, ts, user, text string) {
	h.t.Helper()
	msgs, ok := h.slack.WaitThread(channel, ts, 10*time.Second, func(ms []slacktest.Message) bool {
		for _, m := range ms {
			if m.Ephemeral && m.EphemeralTo == user && strings.Contains(m.Text, text) {
				return true
			}
		}
		return false
	})
	if !ok {
		h.t.Fatalf("no ephemeral %q to %s:\n%s", text, user, dump(msgs))
	}
}

// TestStopByTheAsker: the running card has a Stop button; the asker's
// click kills the run (before the sandbox's own timeout), makes no
// further model call, marks the card stopped by the asker, and says so
// in the thread, with no answer.
func TestStopByTheAsker(t *testing.T) {
	h := newHarness(t, withScript(longScript))
	d := h.post("C0MATH", "U0ALICE", mention+"please sleep a minute", "")
	card := h.waitRunningCard("C0MATH", d.TS)
	var blocks []map[string]any
	if err := json.Unmarshal(card.Blocks, &blocks); err != nil {
		t.Fatal(err)
	}
	if last := blocks[len(blocks)-1]; last["type"] != "actions" || !strings.Contains(string(card.Blocks), `"action_id":"sandpiper_stop"`) {
		t.Fatalf("running card has no Stop button: %s", card.Blocks)
	}
	calls := len(h.wire.requests())

	at := h.click("C0MATH", card.TS, "U0ALICE", stopAction)
	msgs := h.waitStopped("C0MATH", d.TS)
	t.Logf("click to stopped card and notice: %s", time.Since(at))

	stopped := botMessages(msgs, isCard)[0]
	got := stopped.Visible()
	for _, want := range []string{"Stopped", "by <@U0ALICE>", "time.sleep(60)"} {
		if !strings.Contains(got, want) {
			t.Errorf("stopped card lacks %q:\n%s", want, got)
		}
	}
	for _, bad := range []string{"*Output*", "Stopped: ", "Could not run", "context canceled"} {
		if strings.Contains(got, bad) {
			t.Errorf("stopped card shows %q:\n%s", bad, got)
		}
	}
	if strings.Contains(string(stopped.Blocks), stopAction) {
		t.Errorf("the stopped card still has its Stop button: %s", stopped.Blocks)
	}
	if n := len(botMessages(msgs, isAnswer)); n != 0 {
		t.Errorf("%d answers after a stop, want none:\n%s", n, dump(msgs))
	}
	// Once the stopped answer's job is over, no late model call can come.
	h.idle()
	if n := len(h.wire.requests()); n != calls {
		t.Errorf("model calls after the stop: %d, want none", n-calls)
	}
	if q := h.slack.Thread("C0MATH", d.TS)[0]; len(q.Reactions) != 0 {
		t.Errorf("question still marked working: %v", q.Reactions)
	}

	// The thread goes on: the next question is answered.
	h.post("C0MATH", "U0ALICE", "compute 6*7", d.TS)
	msgs = h.waitReplies("C0MATH", d.TS, 2)
	if a := botMessages(msgs, isAnswer); len(a) != 1 || !strings.Contains(a[0].Visible(), "42") {
		t.Errorf("no answer after the stop:\n%s", dump(msgs))
	}
}

// TestStopByAnAdmin: a workspace owner may stop anyone's answer; the card
// names them.
func TestStopByAnAdmin(t *testing.T) {
	h := newHarness(t, withScript(longScript))
	d := h.post("C0MATH", "U0ALICE", mention+"please sleep a minute", "")
	card := h.waitRunningCard("C0MATH", d.TS)
	h.click("C0MATH", card.TS, "U0OWNER", stopAction)
	msgs := h.waitStopped("C0MATH", d.TS)
	if got := botMessages(msgs, isCard)[0].Visible(); !strings.Contains(got, "by <@U0OWNER>") {
		t.Errorf("card does not name the admin who stopped it:\n%s", got)
	}
}

// TestStopBySomeoneElse: anyone else gets an ephemeral refusal, and the
// answer goes on.
func TestStopBySomeoneElse(t *testing.T) {
	h := newHarness(t)
	d := h.post("C0MATH", "U0ALICE", mention+"please sleep a bit", "")
	card := h.waitRunningCard("C0MATH", d.TS)
	h.click("C0MATH", card.TS, "U0BOB", stopAction)
	h.waitEphemeral("C0MATH", d.TS, "U0BOB", "Only the asker or an admin can stop this")
	msgs := h.waitReplies("C0MATH", d.TS, 1)
	if got := botMessages(msgs, isCard)[0].Visible(); !strings.Contains(got, "woke") || strings.Contains(got, "Stopped") {
		t.Errorf("the run did not go on after a refused stop:\n%s", got)
	}
	if len(botMessages(msgs, isAnswer)) != 1 {
		t.Errorf("no answer after a refused stop:\n%s", dump(msgs))
	}
}

// TestStopAfterTheAnswer: a Stop click that reaches the bot after the
// answer finished (a client still showing the running card) changes
// nothing and tells the clicker.
func TestStopAfterTheAnswer(t *testing.T) {
	h := newHarness(t)
	d := h.post("C0MATH", "U0ALICE", mention+"compute 6*7", "")
	msgs := h.waitReplies("C0MATH", d.TS, 1)
	card := botMessages(msgs, isCard)[0]
	if strings.Contains(string(card.Blocks), stopAction) {
		t.Errorf("a finished card has a Stop button: %s", card.Blocks)
	}
	// The running card as a slow client still shows it.
	api := slack.New(slacktest.BotToken, slack.OptionAPIURL(h.slack.URL))
	btn := slack.NewButtonBlockElement(stopAction, "C0MATH "+d.TS+" "+d.TS+" U0ALICE", slack.NewTextBlockObject(slack.PlainTextType, "Stop", false, false))
	_, stale, err := api.PostMessage("C0MATH", slack.MsgOptionTS(d.TS), slack.MsgOptionText("Running Python (run 1)…", false),
		slack.MsgOptionBlocks(slack.NewActionBlock("sandpiper_stop", btn)))
	if err != nil {
		t.Fatal(err)
	}
	before := len(h.slack.Thread("C0MATH", d.TS))
	h.click("C0MATH", stale, "U0ALICE", stopAction)
	h.waitEphemeral("C0MATH", d.TS, "U0ALICE", "already finished")
	after := h.slack.Thread("C0MATH", d.TS)
	if len(after) != before+1 {
		t.Errorf("a stop after the answer changed the thread:\n%s", dump(after))
	}
	if a := botMessages(after, isAnswer); len(a) != 1 || !strings.Contains(a[0].Visible(), "42") {
		t.Errorf("the answer changed:\n%s", dump(after))
	}
}

// TestSlackStopEvent: Slack's own Stop (agent_session_stopped, naming the
// thread) stops the answer running in the thread as the button does; with
// nothing running it only tells the user.
func TestSlackStopEvent(t *testing.T) {
	h := newHarness(t, withScript(longScript))
	d := h.post("D0ALICE", "U0ALICE", "please sleep a minute", "")
	h.waitRunningCard("D0ALICE", d.TS)
	// The session is processing: Slack shows its own stop control, and
	// the status line cycles through loading messages.
	if got := h.slack.SessionStatuses("D0ALICE", d.TS); !slices.Equal(got, []string{"processing"}) {
		t.Errorf("agent session statuses while running = %v, want processing", got)
	}
	if !eventually(5*time.Second, func() bool { return len(h.slack.LoadingMessages("D0ALICE", d.TS)) > 0 }) {
		t.Errorf("no loading messages under the status %q", h.slack.Status("D0ALICE", d.TS))
	}
	calls := len(h.wire.requests())
	if err := h.slack.StopAgentSession("D0ALICE", d.TS, "U0ALICE"); err != nil {
		t.Fatal(err)
	}
	msgs := h.waitStopped("D0ALICE", d.TS)
	if !eventually(5*time.Second, func() bool {
		return slices.Equal(h.slack.SessionStatuses("D0ALICE", d.TS), []string{"processing", "active"})
	}) {
		t.Errorf("agent session statuses after the stop = %v, want processing then active", h.slack.SessionStatuses("D0ALICE", d.TS))
	}
	if got := botMessages(msgs, isCard)[0].Visible(); !strings.Contains(got, "by <@U0ALICE>") {
		t.Errorf("card does not say who stopped it:\n%s", got)
	}
	h.idle()
	if n := len(h.wire.requests()); n != calls {
		t.Errorf("model calls after the stop: %d, want none", n-calls)
	}

	if err := h.slack.StopAgentSession("D0ALICE", d.TS, "U0ALICE"); err != nil {
		t.Fatal(err)
	}
	h.waitEphemeral("D0ALICE", d.TS, "U0ALICE", "already finished")
}

// TestSlackStopEventBySomeoneElse: Slack's own Stop obeys the same rule
// as the button: only the asker or an admin.
func TestSlackStopEventBySomeoneElse(t *testing.T) {
	h := newHarness(t)
	d := h.post("C0MATH", "U0ALICE", mention+"please sleep a bit", "")
	h.waitRunningCard("C0MATH", d.TS)
	if err := h.slack.StopAgentSession("C0MATH", d.TS, "U0BOB"); err != nil {
		t.Fatal(err)
	}
	h.waitEphemeral("C0MATH", d.TS, "U0BOB", "Only the asker or an admin can stop this")
	msgs := h.waitReplies("C0MATH", d.TS, 1)
	if len(botMessages(msgs, isAnswer)) != 1 {
		t.Errorf("no answer after a refused stop:\n%s", dump(msgs))
	}
}
