package bot_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sandpiper-bot/sandpiper/bot/slacktest"
)

// hostileProgram prints terminal escape sequences (an OSC 52 clipboard
// write, a screen clear, BEL), an 8-bit CSI as a raw byte and as U+009B,
// and a bidi override; writes files named with them, one a PNG whose
// title holds them; prints enough to be cut, so that its output is
// attached; and fails with them in its error.
const hostileProgram = `import struct, sys, zlib
hostile = '\x1b]52;c;cm0gLXJmIC8=\x07\x1b[2J\x9b\u202e'
print('osc52', hostile, 'done')
sys.stdout.flush()
sys.stdout.buffer.write(b'raw c1 \x9b31m\n')
sys.stdout.flush()
print(('\x1b[31m\u202e' + 'x' * 50 + '\r\n') * 80)
def chunk(t, b):
    return struct.pack('>I', len(b)) + t + b + struct.pack('>I', zlib.crc32(t + b))
png = b'\x89PNG\r\n\x1a\n' + chunk(b'tEXt', b'Title\x00\x1b]0;pwned\x07 chart \x9b') + chunk(b'IEND', b'')
open('chart' + hostile + '.png', 'wb').write(png)
open('evil\u202egnp.exe', 'w').write('MZ')
open('notes\x07\x1b[2J.csv', 'w').write('a,b\n')
sys.stderr.write('Traceback (most recent call last):\nValueError: ' + hostile + '\n')
sys.exit(1)`

// TestSandboxTextIsNeutralisedInSlack: nothing a program prints or names,
// nor what a model led by it answers, reaches Slack with a control
// character (other than line feed and tab), a C1 control or a bidi
// control: not a message's text or blocks, an upload's name, title or
// alt text, nor the text of an attached output.
func TestSandboxTextIsNeutralisedInSlack(t *testing.T) {
	h := newHarness(t, withScript(func(string) (string, bool) { return hostileProgram, true }))
	h.wire.setSay("\n\n\x1b]8;;https://evil.example\x07click\x1b]8;;\x07 \u202etxt.exe \x9b")
	d := h.post("C0EVIL", "U0ALICE", mention+"run the hostile program", "")
	msgs := h.waitReplies("C0EVIL", d.TS, 1)

	// What the Web API was sent: every form value but the token and the
	// metadata (which Slack keeps for the bot and does not show), and
	// the strings of the JSON ones (blocks, files).
	var checked int
	check := func(where, s string) {
		t.Helper()
		checked++
		if r, i := slacktest.UnsafeRune(s); r >= 0 {
			t.Errorf("%s holds %U at %d: %q", where, r, i, s)
		}
	}
	for _, c := range h.slack.Calls("") {
		for k, vs := range c.Form {
			if k == "token" || k == "metadata" {
				continue
			}
			for _, v := range vs {
				check(c.Method+" "+k, v)
				var j any
				if json.Unmarshal([]byte(v), &j) == nil {
					for _, s := range slacktest.JSONStrings(j) {
						check(c.Method+" "+k+" (JSON)", s)
					}
				}
			}
		}
	}
	// What the thread holds.
	var sawCard, sawChart, sawExe, sawOutput bool
	for _, m := range msgs {
		if m.User != slacktest.BotUserID {
			continue
		}
		check("message text", m.Text)
		var blocks any
		json.Unmarshal(m.Blocks, &blocks)
		for _, s := range slacktest.JSONStrings(blocks) {
			check("message blocks", s)
		}
		sawCard = sawCard || isCard(m) && strings.Contains(m.Visible(), "osc52 ␛]52;c;cm0gLXJmIC8=␇␛[2J\ufffd\ufffd done")
		for _, f := range m.Files {
			check("file name", f.Name)
			check("file title", f.Title)
			check("alt text", f.AltTxt)
			switch {
			case strings.HasPrefix(f.Name, "chart"):
				sawChart = f.AltTxt == "␛]0;pwned␇ chart \ufffd"
			case f.Name == "evil\ufffdgnp.exe":
				sawExe = string(f.Data) == "MZ" // the file itself is sent as written
			case f.Name == "output-1.txt":
				check("attached output", string(f.Data))
				sawOutput = strings.Contains(string(f.Data), "␛[31m\ufffdxxx")
			}
		}
	}
	if !sawCard || !sawChart || !sawExe || !sawOutput {
		t.Errorf("the run's text did not reach Slack as expected (card %v, chart %v, exe %v, output %v):\n%s", sawCard, sawChart, sawExe, sawOutput, dump(msgs))
	}
	answer := botMessages(msgs, isAnswer)[0].Visible()
	if !strings.Contains(answer, "␛]8;;https://evil.example␇click") || !strings.Contains(answer, "ValueError: ␛]52;c;") {
		t.Errorf("the answer is not shown neutralised:\n%s", answer)
	}
	if checked < 20 {
		t.Errorf("only %d texts checked", checked)
	}
}

// TestSandboxTextIsNeutralisedForTheModel: what a program prints reaches
// the model as it reaches Slack: the tool result of the run, and the
// earlier run a follow-up's history holds, carry no control character
// (other than line feed and tab), C1 control or bidi control.
func TestSandboxTextIsNeutralisedForTheModel(t *testing.T) {
	h := newHarness(t, withScript(func(string) (string, bool) { return hostileProgram, true }))
	d := h.post("C0EVIL", "U0ALICE", mention+"run the hostile program", "")
	h.waitReplies("C0EVIL", d.TS, 1)
	h.post("C0EVIL", "U0ALICE", "and again", d.TS)
	h.waitReplies("C0EVIL", d.TS, 2)
	results := 0
	for i, r := range h.wire.requests() {
		for _, m := range r.Messages {
			if m.Role != "tool" {
				continue
			}
			results++
			text := contentText(m.Content)
			strs := []string{text}
			var j any
			if json.Unmarshal([]byte(text), &j) == nil { // this turn's run: the tool's JSON
				strs = slacktest.JSONStrings(j)
			}
			for _, s := range strs {
				if r, at := slacktest.UnsafeRune(s); r >= 0 {
					t.Errorf("request %d: a tool result holds %U at %d: %q", i+1, r, at, s)
				}
			}
			if !strings.Contains(text, "osc52 ␛]52;c;cm0gLXJmIC8=␇␛[2J\ufffd\ufffd done") {
				t.Errorf("request %d: the tool result does not show the output neutralised: %q", i+1, text)
			}
		}
	}
	// The first answer reads one result; the follow-up the earlier run's
	// (from the thread's memory), then its own.
	if results < 3 {
		t.Errorf("%d tool results sent to the model, want at least 3", results)
	}
}
