package bot_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandpiper-bot/sandpiper/bot/internal/replica/redistest"
	"github.com/sandpiper-bot/sandpiper/bot/slacktest"
)

// stateScript writes the programs of the state tests: the first turn
// defines a DataFrame, a number and what cannot be kept; later turns use
// them without defining them again.
func stateScript(q string) (string, bool) {
	switch {
	case strings.Contains(q, "define the data"):
		return "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2, 3], 'b': [4.0, 5.0, 6.0]})\nx = 41\ngen = (i for i in range(3))\nprint('defined', len(df))", true
	case strings.Contains(q, "use the data"):
		return "print(x + 1, df.shape)", true
	case strings.Contains(q, "make something big"):
		return "big = b'x' * 300_000\nsmall = 5\nprint('made')", true
	case strings.Contains(q, "show small"):
		return "print(small)", true
	}
	return defaultScript(q)
}

// lastToolResult returns the last tool result the model was sent.
func lastToolResult(h *harness) string {
	reqs := h.wire.requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		ms := reqs[i].Messages
		if last := ms[len(ms)-1]; last.Role == "tool" {
			return contentText(last.Content)
		}
	}
	return ""
}

// answerN returns the text of the thread's nth answer (from 0), after
// waiting for n+1 answers or notices.
func answerN(h *harness, channel, ts string, n int) (string, []slacktest.Message) {
	h.t.Helper()
	msgs := h.waitReplies(channel, ts, n+1)
	answers := botMessages(msgs, isAnswer)
	if len(answers) <= n {
		h.t.Fatalf("thread %s: no answer %d:\n%s", ts, n, dump(msgs))
	}
	return answers[n].Visible(), msgs
}

// TestStateAcrossTurns: a follow-up uses the variables the first run of
// the thread defined, without defining them again; the model is told
// what was kept and what was not, and so are the thread's readers. A new
// thread starts empty, and the variables survive a restart.
func TestStateAcrossTurns(t *testing.T) {
	requireModules(t, "pandas")
	h := newHarness(t, withScript(stateScript), withState(0))
	d := h.post("C0DATA", "U0ALICE", mention+"define the data", "")
	got, msgs := answerN(h, "C0DATA", d.TS, 0)
	if !strings.Contains(got, "defined 3") {
		t.Fatalf("first answer = %q", got)
	}
	if card := botMessages(msgs, isCard)[0].Visible(); !strings.Contains(card, "Not kept for later runs: `gen` (cannot pickle 'generator' object).") {
		t.Errorf("the card does not say gen was not kept:\n%s", card)
	}
	res := lastToolResult(h)
	for _, want := range []string{`"kept":["pd","df","x"]`, `"dropped":["gen (cannot pickle 'generator' object)"]`} {
		if !strings.Contains(res, want) {
			t.Errorf("the model's tool result lacks %s:\n%s", want, res)
		}
	}
	if desc := h.wire.requests()[0].Tools[0].Function.Description; !strings.Contains(desc, "kept for the later calls of this conversation") {
		t.Errorf("the tool's description does not say variables are kept:\n%s", desc)
	}

	h.post("C0DATA", "U0BOB", "now use the data", d.TS)
	if got, msgs := answerN(h, "C0DATA", d.TS, 1); !strings.Contains(got, "42 (3, 2)") {
		t.Fatalf("follow-up answer = %q:\n%s", got, dump(msgs))
	}
	if res := lastToolResult(h); !strings.Contains(res, `"restored":["pd","df","x"]`) {
		t.Errorf("the model's tool result lacks what was restored:\n%s", res)
	}

	// Another thread, in the same channel and in another, starts empty.
	for _, ch := range []string{"C0DATA", "C0OTHER"} {
		o := h.post(ch, "U0ALICE", mention+"use the data", "")
		if got, _ := answerN(h, ch, o.TS, 0); !strings.Contains(got, "NameError: name 'x' is not defined") {
			t.Errorf("%s: a new thread's answer = %q, want a NameError", ch, got)
		}
	}

	// A new bot on the same data directory.
	h.restart()
	h.post("C0DATA", "U0ALICE", mention+"use the data again", d.TS)
	if got, msgs := answerN(h, "C0DATA", d.TS, 2); !strings.Contains(got, "42 (3, 2)") {
		t.Fatalf("answer after a restart = %q:\n%s", got, dump(msgs))
	}
}

// TestStateSwitchedOff: an admin switches state off in a channel; its
// threads' runs then start empty, and the model is told. Switched on
// again, the variables come back.
func TestStateSwitchedOff(t *testing.T) {
	requireModules(t, "pandas")
	h := newHarness(t, withScript(stateScript), withState(0))
	d := h.post("C0DATA", "U0ALICE", mention+"define the data", "")
	answerN(h, "C0DATA", d.TS, 0)

	h.post("C0DATA", "U0BOB", mention+"state off", "")
	if msgs, ok := waitEphemeral(h, "C0DATA", "U0BOB", "can change state settings. State is *on* in this channel; nothing was changed."); !ok {
		t.Fatalf("no refusal:\n%s", dump(msgs))
	}
	s := h.post("C0DATA", "U0ADMIN", mention+"state off", "")
	if got := botMessages(h.waitReplies("C0DATA", s.TS, 1), isNotice)[0].Visible(); !strings.Contains(got, "State is now *off* in this channel") {
		t.Errorf("reply = %q", got)
	}
	h.post("C0DATA", "U0ALICE", mention+"use the data", d.TS)
	if got, _ := answerN(h, "C0DATA", d.TS, 1); !strings.Contains(got, "NameError: name 'x' is not defined") {
		t.Errorf("with state off, the answer = %q, want a NameError", got)
	}
	if res := lastToolResult(h); !strings.Contains(res, `"state":{"note":"off in this conversation`) {
		t.Errorf("the model was not told state is off:\n%s", res)
	}

	if _, err := h.slack.SlashCommand("C0DATA", "U0OWNER", "/sandpiper", "state on"); err != nil {
		t.Fatal(err)
	}
	if msgs, ok := waitEphemeral(h, "C0DATA", "U0OWNER", "State is now *on*"); !ok {
		t.Fatalf("no reply to /sandpiper state on:\n%s", dump(msgs))
	}
	h.post("C0DATA", "U0ALICE", mention+"use the data", d.TS)
	if got, _ := answerN(h, "C0DATA", d.TS, 2); !strings.Contains(got, "42 (3, 2)") {
		t.Errorf("state on again: answer = %q", got)
	}
}

// TestStateLimitsAndSetAside: a value past the state's limit is not
// kept (the card and the model say so) while the rest is; a state file
// that cannot be read, or is too large, is set aside, not deleted, and
// the run goes on without it.
func TestStateLimitsAndSetAside(t *testing.T) {
	h := newHarness(t, withScript(stateScript), withState(64<<10))
	d := h.post("C0DATA", "U0ALICE", mention+"make something big", "")
	_, msgs := answerN(h, "C0DATA", d.TS, 0)
	if card := botMessages(msgs, isCard)[0].Visible(); !strings.Contains(card, "Not kept for later runs: `big` (too large: the state would pass its limit of 64 KiB)") {
		t.Errorf("the card does not say big was not kept:\n%s", card)
	}
	h.post("C0DATA", "U0ALICE", "show small", d.TS)
	if got, _ := answerN(h, "C0DATA", d.TS, 1); !strings.Contains(got, "**5**") {
		t.Fatalf("answer = %q, want 5", got)
	}

	dir := filepath.Join(h.cfg.DataDir, "threads", "C0DATA_"+d.TS)
	state := filepath.Join(dir, "state.pickle")
	if _, err := os.Stat(state); err != nil {
		t.Fatalf("no state in the thread's workspace: %v", err)
	}
	for i, damage := range []string{"damaged", "too large"} {
		data := []byte("not a state")
		if damage == "too large" {
			data = make([]byte, 65<<10)
		}
		if err := os.WriteFile(state, data, 0o640); err != nil {
			t.Fatal(err)
		}
		h.post("C0DATA", "U0ALICE", "show small", d.TS)
		got, msgs := answerN(h, "C0DATA", d.TS, 2+i)
		if !strings.Contains(got, "NameError: name 'small' is not defined") {
			t.Errorf("%s: answer = %q, want a NameError", damage, got)
		}
		res := lastToolResult(h)
		if !strings.Contains(res, "set aside") {
			t.Errorf("%s: the model was not told the state was set aside:\n%s", damage, res)
		}
		if damage == "damaged" {
			cards := botMessages(msgs, isCard)
			if card := cards[len(cards)-1].Visible(); !strings.Contains(card, "could not be read") || !strings.Contains(card, "set aside") {
				t.Errorf("the card does not say the state was set aside:\n%s", card)
			}
		}
		if aside, err := os.ReadFile(filepath.Join(dir, "state-aside.pickle")); err != nil || string(aside) != string(data) {
			t.Errorf("%s: the state set aside holds %d bytes (%v), want the %d written", damage, len(aside), err, len(data))
		}
	}
}

// TestStateAcrossReplicas: with replicas sharing Redis, a thread's
// follow-up answered by another replica (with a data directory of its
// own) finds the variables the first one left.
func TestStateAcrossReplicas(t *testing.T) {
	requireModules(t, "pandas")
	c := newCluster(t, 0, redistest.Options{})
	c.wire.setScript(stateScript)
	c.state = true
	r1 := c.add("r1")
	d := r1.post("C0DATA", "U0ALICE", mention+"define the data", "")
	if got, _ := answerN(r1, "C0DATA", d.TS, 0); !strings.Contains(got, "defined 3") {
		t.Fatalf("first answer = %q", got)
	}
	if err := r1.stop(); err != nil {
		t.Fatal(err)
	}
	r2 := c.add("r2")
	r2.post("C0DATA", "U0BOB", "now use the data", d.TS)
	if got, msgs := answerN(r2, "C0DATA", d.TS, 1); !strings.Contains(got, "42 (3, 2)") {
		t.Fatalf("answer on the other replica = %q:\n%s", got, dump(msgs))
	}
	if _, err := os.Stat(filepath.Join(r1.cfg.DataDir, "threads", "C0DATA_"+d.TS, "state.pickle")); err == nil {
		t.Error("with Redis, the state was kept in the replica's data directory")
	}
}
