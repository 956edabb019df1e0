package bot_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/bot"
	"github.com/sandpiper-bot/sandpiper/bot/slacktest"
)

// Scheduled reports, end to end: "repeat every monday 9:00" in an
// answer's thread; at each time a new message in the channel answers the
// question afresh in its thread, and from the second on says what
// changed; an archived channel pauses the schedule and tells its owner
// and the admins.
func TestScheduledReport(t *testing.T) {
	var signups atomic.Int64
	signups.Store(1100)
	h := newHarness(t, withScript(func(q string) (string, bool) {
		if strings.Contains(q, "sign-ups") {
			return fmt.Sprintf("print(%d)", signups.Add(100)), true
		}
		return defaultScript(q)
	}))
	h.slack.AddUser(slacktest.User{ID: "U0ALICE", Name: "alice", TZ: "Europe/Paris"})
	d := h.post("C0MATH", "U0ALICE", mention+"how many sign-ups this week?", "")
	h.waitReplies("C0MATH", d.TS, 1)

	h.post("C0MATH", "U0ALICE", mention+"repeat every monday 9:00", d.TS)
	msgs, ok := h.slack.WaitThread("C0MATH", d.TS, 10*time.Second, func(ms []slacktest.Message) bool {
		return len(botMessages(ms, func(m slacktest.Message) bool { return strings.Contains(m.Text, ":repeat: I'll answer") })) > 0
	})
	if !ok {
		t.Fatalf("no confirmation:\n%s", dump(msgs))
	}
	confirm := botMessages(msgs, func(m slacktest.Message) bool { return strings.Contains(m.Text, ":repeat: I'll answer") })[0].Text
	for _, want := range []string{"_how many sign-ups this week?_", "every Monday at 9:00 (Europe/Paris)", "The first is Mon "} {
		if !strings.Contains(confirm, want) {
			t.Errorf("confirmation %q lacks %q", confirm, want)
		}
	}

	paris, _ := time.LoadLocation("Europe/Paris")
	now := time.Now().In(paris)
	monday := time.Date(now.Year(), now.Month(), now.Day()+(8-int(now.Weekday()))%7, 9, 0, 30, 0, paris)
	if !monday.After(now) {
		monday = monday.AddDate(0, 0, 7)
	}
	reports := func() []slacktest.Message {
		return botMessages(h.slack.Messages("C0MATH"), func(m slacktest.Message) bool {
			return m.ThreadTS == "" && strings.HasPrefix(m.Text, ":repeat: *Scheduled report*")
		})
	}
	for i, want := range []string{
		"The first report of this schedule",
		"Changed since the last report (" + monday.Format("Mon 2 Jan") + " at 9:00)*\n• The result is: 1300 → 1400 (+7.7%)",
	} {
		at := monday.AddDate(0, 0, 7*i)
		h.bot.TickSchedules(t.Context(), at)
		h.bot.TickSchedules(t.Context(), at.Add(time.Minute)) // not twice
		rs := reports()
		if len(rs) != i+1 {
			t.Fatalf("after fire %d: %d reports in the channel:\n%s", i+1, len(rs), dump(h.slack.Messages("C0MATH")))
		}
		r := rs[i]
		if !strings.Contains(r.Text, "every Monday at 9:00 (Europe/Paris) · set up by <@U0ALICE>\n>how many sign-ups this week?") {
			t.Errorf("report %d says %q", i+1, r.Text)
		}
		thread := h.waitReplies("C0MATH", r.TS, 1)
		answers := botMessages(thread, isAnswer)
		if len(answers) != 1 || !strings.Contains(answers[0].Visible(), fmt.Sprint(1300+100*i)) || !strings.Contains(answers[0].Visible(), want) {
			t.Errorf("report %d's thread, want %q:\n%s", i+1, want, dump(thread))
		}
		if len(botMessages(thread, isCard)) != 1 {
			t.Errorf("report %d: want one tool card (a fresh run):\n%s", i+1, dump(thread))
		}
	}

	list := slash(t, h, "U0BOB", "schedules", "_how many sign-ups this week?_ every Monday at 9:00 (Europe/Paris), set up by <@U0ALICE> · next ")
	id := strings.Split(list.Text, "`")[1]
	click := func(user string, m slacktest.Message, actionID, want string) {
		t.Helper()
		if _, err := h.slack.ClickButton(slacktest.Click{Channel: "C0MATH", MessageTS: m.TS, User: user, ActionID: actionID}); err != nil {
			t.Fatal(err)
		}
		if msgs, ok := waitEphemeral(h, "C0MATH", user, want); !ok {
			t.Fatalf("%s clicking %s: no reply with %q:\n%s", user, actionID, want, dump(msgs))
		}
	}
	click("U0BOB", list, "sandpiper_schedule_delete", "only <@U0ALICE>, who set it up, or an admin")
	click("U0ALICE", slash(t, h, "U0ALICE", "schedules", id), "sandpiper_schedule_toggle", "Paused the schedule `"+id+"`")
	h.bot.TickSchedules(t.Context(), monday.AddDate(0, 0, 14))
	if rs := reports(); len(rs) != 2 {
		t.Errorf("%d reports while paused, want 2", len(rs))
	}
	click("U0ALICE", slash(t, h, "U0ALICE", "schedules", "paused: paused by <@U0ALICE>"), "sandpiper_schedule_toggle", "Resumed the schedule `"+id+"`")

	h.slack.ArchiveChannel("C0MATH")
	h.bot.TickSchedules(t.Context(), monday.AddDate(0, 0, 21))
	for _, user := range []string{"U0ALICE", "U0ADMIN"} {
		dms := h.slack.Messages(user)
		if len(dms) != 1 || !strings.Contains(dms[0].Text, ":double_vertical_bar: I paused the scheduled report _how many sign-ups this week?_ in <#C0MATH> (`"+id+"`): the channel was archived.") {
			t.Errorf("%s was told %s", user, dump(dms))
		}
	}
	slash(t, h, "U0ALICE", "schedules", "paused: the channel was archived")
	slash(t, h, "U0ALICE", "schedules delete "+id, "Deleted the schedule `"+id+"`")
	h.bot.TickSchedules(t.Context(), monday.AddDate(0, 0, 28))
	if rs := reports(); len(rs) != 2 {
		t.Errorf("%d reports after the schedule was deleted, want 2", len(rs))
	}
}

// slash sends "/sandpiper text" in C0MATH as user and returns its reply,
// which must hold want.
func slash(t *testing.T, h *harness, user, text, want string) slacktest.Message {
	t.Helper()
	env, err := h.slack.SlashCommand("C0MATH", user, "/sandpiper", text)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := h.slack.WaitAck(env, 5*time.Second); !ok {
		t.Fatal("slash command not acked")
	}
	msgs, ok := waitEphemeral(h, "C0MATH", user, want)
	if !ok {
		t.Fatalf("/sandpiper %s: no reply with %q:\n%s", text, want, dump(msgs))
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if m := msgs[i]; m.Ephemeral && m.EphemeralTo == user && strings.Contains(m.Visible(), want) {
			return m
		}
	}
	return slacktest.Message{}
}

// TestRepeatRefused: repeat's mistakes are answered in words, and nothing
// is set up.
func TestRepeatRefused(t *testing.T) {
	h := newHarness(t, withConfig(func(c *bot.Config) { c.Schedules.PerUser = 1 }))
	d := h.post("C0MATH", "U0ALICE", mention+"compute 6*7", "")
	h.waitReplies("C0MATH", d.TS, 1)
	for _, tc := range []struct{ say, want string }{
		{"repeat cron 0 0 30 2 *", "`0 0 30 2 *` never fires"},
		{"repeat cron */10 * * * *", "fires every 10 minutes; the shortest interval allowed here is 1 hour"},
		{"repeat every day 25:00", `"25:00" is not a time of day`},
		{"repeat daily 8:00", ":repeat: I'll answer _compute 6*7_ again every day at 8:00"},
		{"repeat weekdays 9:00", "you already own 1 scheduled reports, the most one person may here"},
	} {
		p := h.post("C0MATH", "U0ALICE", mention+tc.say, d.TS)
		waitReply(t, h, d.TS, p.TS, tc.want)
	}
	top := h.post("C0MATH", "U0ALICE", mention+"repeat every monday 9:00", "")
	waitReply(t, h, top.TS, top.TS, "Use `repeat` in the thread of an answer")
}

// waitReply waits for the bot's reply after the message ts in a thread
// of C0MATH, which must hold want.
func waitReply(t *testing.T, h *harness, thread, ts, want string) {
	t.Helper()
	msgs, ok := h.slack.WaitThread("C0MATH", thread, 10*time.Second, func(ms []slacktest.Message) bool {
		for _, m := range ms {
			if m.User == slacktest.BotUserID && m.TS > ts {
				return true
			}
		}
		return false
	})
	for _, m := range msgs {
		if m.User == slacktest.BotUserID && m.TS > ts {
			if !ok || !strings.Contains(m.Text, want) {
				t.Errorf("after %s: %q, want %q", ts, m.Text, want)
			}
			return
		}
	}
	t.Errorf("no reply after %s (want %q):\n%s", ts, want, dump(msgs))
}

// TestRepeatForm: "repeat" alone in an answer's thread offers the form;
// its mistakes come back as field errors in the ack (the form stays
// open), and a good submission closes it and says so in the thread.
func TestRepeatForm(t *testing.T) {
	h := newHarness(t)
	h.slack.AddUser(slacktest.User{ID: "U0ALICE", Name: "alice", TZ: "Europe/Paris"})
	d := h.post("C0MATH", "U0ALICE", mention+"compute 6*7", "")
	answers := botMessages(h.waitReplies("C0MATH", d.TS, 1), isAnswer)
	// The answer's own "Repeat…" button opens the form.
	if _, err := h.slack.ClickButton(slacktest.Click{Channel: "C0MATH", MessageTS: answers[len(answers)-1].TS, User: "U0ALICE", ActionID: "sandpiper_repeat"}); err != nil {
		t.Fatal(err)
	}
	if v, ok := h.slack.WaitView(1, 10*time.Second); !ok || !strings.Contains(string(v.JSON), "compute 6*7") {
		t.Fatalf("the answer's button opened no form for its question: %+v", v)
	}
	// So does "repeat" alone, through the button it offers.
	p := h.post("C0MATH", "U0ALICE", mention+"repeat", d.TS)
	msgs, ok := h.slack.WaitThread("C0MATH", d.TS, 10*time.Second, func(ms []slacktest.Message) bool {
		for _, m := range ms {
			if m.Ephemeral && m.TS > p.TS && strings.Contains(string(m.Blocks), "sandpiper_repeat") {
				return true
			}
		}
		return false
	})
	var offer slacktest.Message
	for _, m := range msgs {
		if m.Ephemeral && m.TS > p.TS {
			offer = m
		}
	}
	if !ok || !strings.Contains(offer.Visible(), "I can answer _compute 6*7_ again at set times") {
		t.Fatalf("no offer of the form:\n%s", dump(msgs))
	}
	if _, err := h.slack.ClickButton(slacktest.Click{Channel: "C0MATH", MessageTS: offer.TS, User: "U0ALICE", ActionID: "sandpiper_repeat"}); err != nil {
		t.Fatal(err)
	}
	view, ok := h.slack.WaitView(2, 10*time.Second)
	if !ok {
		t.Fatalf("no form opened; calls: %v", h.slack.Calls("views.open"))
	}
	if !strings.Contains(string(view.JSON), `"initial_value":"Europe/Paris"`) || !strings.Contains(string(view.JSON), `"initial_conversation":"C0MATH"`) {
		t.Errorf("the form does not start from alice's zone and this channel: %s", view.JSON)
	}
	good := map[string]string{"kind": "option:weekly", "weekday": "option:1", "clock": "time:09:00", "tz": "Europe/Paris", "channel": "conversation:C0MATH"}
	with := func(k, v string, more ...string) map[string]string {
		m := map[string]string{}
		for a, b := range good {
			m[a] = b
		}
		m[k] = v
		for i := 0; i+1 < len(more); i += 2 {
			m[more[i]] = more[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name   string
		values map[string]string
		field  string
		want   string
	}{
		{"never", with("kind", "option:cron", "cron", "0 0 30 2 *"), "cron", "0 0 30 2 * never fires"},
		{"too often", with("kind", "option:cron", "cron", "*/5 * * * *"), "cron", "fires every 5 minutes; the shortest interval allowed here is 1 hour"},
		{"no day", with("kind", "option:monthly"), "day", "Write the day of the month"},
		{"day 31", with("kind", "option:monthly", "day", "31"), "day", "from 1 to 28"},
		{"zone", with("tz", "Mars/Olympus"), "tz", "is not a time zone"},
		{"good", good, "", ""},
	} {
		env, err := h.slack.SubmitView(view.ID, tc.values)
		if err != nil {
			t.Fatal(err)
		}
		ack, ok := h.slack.WaitAck(env, 5*time.Second)
		if !ok {
			t.Fatalf("%s: not acked", tc.name)
		}
		var resp struct {
			Action string            `json:"response_action"`
			Errors map[string]string `json:"errors"`
		}
		json.Unmarshal(ack.Payload, &resp)
		if tc.field == "" {
			if len(ack.Payload) != 0 {
				t.Errorf("%s: acked with %s, want the form closed", tc.name, ack.Payload)
			}
			continue
		}
		if resp.Action != "errors" || !strings.Contains(resp.Errors[tc.field], tc.want) || len(resp.Errors) != 1 {
			t.Errorf("%s: acked with %s, want an error under %q with %q", tc.name, ack.Payload, tc.field, tc.want)
		}
	}
	msgs, ok = h.slack.WaitThread("C0MATH", d.TS, 10*time.Second, func(ms []slacktest.Message) bool {
		return len(botMessages(ms, func(m slacktest.Message) bool { return strings.Contains(m.Text, "scheduled _compute 6*7_") })) == 1
	})
	if !ok {
		t.Errorf("no word in the thread:\n%s", dump(msgs))
	}
	slash(t, h, "U0ALICE", "schedules", "_compute 6*7_ every Monday at 9:00 (Europe/Paris), set up by <@U0ALICE>")
}

// TestSchedulesOff: with SANDPIPER_SCHEDULES=off answers have no Repeat
// button and the commands say the feature is off.
func TestSchedulesOff(t *testing.T) {
	h := newHarness(t, withConfig(func(c *bot.Config) { c.SchedulesOff = true }))
	d := h.post("C0MATH", "U0ALICE", mention+"compute 6*7", "")
	msgs := h.waitReplies("C0MATH", d.TS, 1)
	for _, m := range botMessages(msgs, isAnswer) {
		if strings.Contains(string(m.Blocks), "sandpiper_repeat") {
			t.Errorf("a Repeat button with schedules off: %s", m.Blocks)
		}
	}
	p := h.post("C0MATH", "U0ALICE", mention+"repeat every monday 9:00", d.TS)
	waitReply(t, h, d.TS, p.TS, "Scheduled reports are turned off here")
}
