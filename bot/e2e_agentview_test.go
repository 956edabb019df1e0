package bot_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/bot"
	"github.com/sandpiper-bot/sandpiper/bot/slacktest"
)

// waitPrompts waits for suggested prompts on a thread ("" for the DM's
// latest message).
func (h *harness) waitPrompts(channel, threadTS string) slacktest.SuggestedPrompts {
	h.t.Helper()
	p, ok := h.slack.WaitPrompts(channel, threadTS, 10*time.Second)
	if !ok {
		h.t.Fatalf("no suggested prompts on %s/%q; calls: %+v", channel, threadTS, h.slack.Calls("assistant.threads.setSuggestedPrompts"))
	}
	return p
}

// TestAgentViewSuggestsPromptsAndTitles: both ways Slack announces a new
// agent thread get 3–4 suggested prompts (a math question, a data
// question, a CSV to attach); the thread is named after its first
// question, once.
func TestAgentViewSuggestsPromptsAndTitles(t *testing.T) {
	h := newHarness(t)

	// The agent view (agent_view): the messages tab opened.
	if err := h.slack.OpenAppHome("D0ALICE", "U0ALICE", "messages"); err != nil {
		t.Fatal(err)
	}
	p := h.waitPrompts("D0ALICE", "")
	if len(p.Prompts) < 3 || len(p.Prompts) > 4 || p.Title == "" {
		t.Errorf("prompts = %+v, want a title and 3-4 prompts", p)
	}
	var all strings.Builder
	for _, pr := range p.Prompts {
		all.WriteString(strings.ToLower(pr.Title + " " + pr.Message + "\n"))
	}
	for _, want := range []string{"csv", "fibonacci", "dice"} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("prompts lack a %q question:\n%s", want, all.String())
		}
	}
	// The home tab is not a conversation.
	before := len(h.slack.Calls("assistant.threads.setSuggestedPrompts"))
	if err := h.slack.OpenAppHome("D0ALICE", "U0ALICE", "home"); err != nil {
		t.Fatal(err)
	}

	// The assistant view (assistant_view): a new thread.
	thread, err := h.slack.StartAssistantThread("D0ALICE", "U0ALICE")
	if err != nil {
		t.Fatal(err)
	}
	h.waitPrompts("D0ALICE", thread)
	if n := len(h.slack.Calls("assistant.threads.setSuggestedPrompts")); n != before+1 {
		t.Errorf("setSuggestedPrompts calls = %d, want %d (none for the home tab)", n, before+1)
	}

	h.post("D0ALICE", "U0ALICE", "compute 6*7\nand explain it", thread)
	h.waitReplies("D0ALICE", thread, 1)
	if got := h.slack.WaitTitle("D0ALICE", thread, 10*time.Second); got != "compute 6*7" {
		t.Errorf("title = %q, want the first question's first line", got)
	}
	h.post("D0ALICE", "U0ALICE", "compute 7*8", thread)
	h.waitReplies("D0ALICE", thread, 2)
	if n := len(h.slack.Calls("assistant.threads.setTitle")); n != 1 {
		t.Errorf("setTitle calls = %d, want 1 (after the first question only)", n)
	}
	if got := h.slack.Title("D0ALICE", thread); got != "compute 6*7" {
		t.Errorf("title changed to %q", got)
	}
}

// TestAgentViewWithoutTheScope: an app installed without assistant:write
// answers as before, with one warning in the log and in doctor, and makes
// no agent view calls Slack would refuse.
func TestAgentViewWithoutTheScope(t *testing.T) {
	var scopes []string
	for _, s := range slacktest.DefaultScopes {
		if s != "assistant:write" {
			scopes = append(scopes, s)
		}
	}
	h := newHarness(t, func(h *harness) { h.slack.SetScopes(scopes...) })

	checks := bot.Doctor(context.Background(), h.cfg)
	warned := 0
	for _, c := range checks {
		if c.Warn {
			warned++
			if !c.OK || !strings.Contains(c.Name, "assistant:write") || !strings.Contains(c.Detail, "reinstall") {
				t.Errorf("doctor warning = %+v", c)
			}
		}
		if !c.OK {
			t.Errorf("doctor failed a check for an optional scope: %+v", c)
		}
	}
	if warned != 1 {
		t.Errorf("doctor warnings = %d, want 1: %+v", warned, checks)
	}

	if err := h.slack.OpenAppHome("D0ALICE", "U0ALICE", "messages"); err != nil {
		t.Fatal(err)
	}
	d := h.post("D0ALICE", "U0ALICE", "compute 6*7", "")
	msgs := h.waitReplies("D0ALICE", d.TS, 1)
	if a := botMessages(msgs, isAnswer); len(a) != 1 || !strings.Contains(a[0].Visible(), "42") {
		t.Errorf("no answer without the scope:\n%s", dump(msgs))
	}
	for _, m := range []string{"assistant.threads.setSuggestedPrompts", "assistant.threads.setTitle"} {
		if n := len(h.slack.Calls(m)); n != 0 {
			t.Errorf("%s called %d times without the scope", m, n)
		}
	}
	if n := strings.Count(h.logs.String(), "agent view: no suggested prompts"); n != 1 {
		t.Errorf("log has %d agent view warnings, want 1:\n%s", n, h.logs.String())
	}
}

// TestAgentViewScopeRemovedLater: when Slack refuses the agent view's
// calls (the scope was removed after the bot started), the bot warns
// once and stops making them; answers go on.
func TestAgentViewScopeRemovedLater(t *testing.T) {
	h := newHarness(t)
	var scopes []string
	for _, s := range slacktest.DefaultScopes {
		if s != "assistant:write" {
			scopes = append(scopes, s)
		}
	}
	h.slack.SetScopes(scopes...)
	if err := h.slack.OpenAppHome("D0ALICE", "U0ALICE", "messages"); err != nil {
		t.Fatal(err)
	}
	if !eventually(10*time.Second, func() bool { return strings.Contains(h.logs.String(), "agent view: no suggested prompts") }) {
		t.Fatalf("no warning when Slack refused the prompts:\n%s", h.logs.String())
	}
	if err := h.slack.OpenAppHome("D0ALICE", "U0ALICE", "messages"); err != nil {
		t.Fatal(err)
	}
	d := h.post("D0ALICE", "U0ALICE", "compute 6*7", "")
	h.waitReplies("D0ALICE", d.TS, 1)
	if n := len(h.slack.Calls("assistant.threads.setSuggestedPrompts")) + len(h.slack.Calls("assistant.threads.setTitle")); n != 1 {
		t.Errorf("agent view calls after Slack refused one: %d, want only that one", n)
	}
	if n := strings.Count(h.logs.String(), "agent view: no suggested prompts"); n != 1 {
		t.Errorf("log has %d agent view warnings, want 1", n)
	}
}
