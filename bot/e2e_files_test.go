package bot_test

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/bot"
	"github.com/sandpiper-bot/sandpiper/bot/slacktest"
)

// The data tests: files from Slack into the sandbox, and the program's
// files back into the thread, through the fake Slack, the real agent loop
// with the OpenAI provider at the wire, and the real sandbox.

var (
	runtimeOnce sync.Once
	runtimeInfo agent.Runtime
	runtimeErr  error
)

// requireModules skips the test when the sandbox's Python cannot import
// the modules (.ci/run installs them from Debian's packages).
func requireModules(t *testing.T, mods ...string) {
	t.Helper()
	sb := realSandbox(t)
	runtimeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		runtimeInfo, runtimeErr = agent.ProbeRuntime(ctx, sb)
	})
	if runtimeErr != nil {
		t.Fatalf("probing the sandbox's Python: %v", runtimeErr)
	}
	for _, m := range mods {
		if !runtimeInfo.Has(m) {
			t.Skipf("the sandbox's Python has no %s (%s); install python3-%s", m, runtimeInfo, m)
		}
	}
}

// salesCSV is twelve months of revenue; the total is 78000 + 12·1000·… see
// salesTotal.
func salesCSV() []byte {
	var b bytes.Buffer
	b.WriteString("month,region,revenue\n")
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&b, "2024-%02d,north,%d\n", i, 1000*i+7)
	}
	return b.Bytes()
}

const salesTotal = "78084" // sum of 1000·i + 7 for i = 1…12

// dataScript writes the programs of the data tests.
func dataScript(q string) (string, bool) {
	switch {
	case strings.Contains(q, "total revenue"):
		return "import pandas as pd\ndf = pd.read_csv('/mnt/data/sales.csv')\nprint(df['revenue'].sum())", true
	case strings.Contains(q, "plot the revenue"):
		return `import pandas as pd
import matplotlib.pyplot as plt
df = pd.read_csv('sales.csv')
fig, ax = plt.subplots(figsize=(6, 3))
ax.bar(df['month'], df['revenue'])
ax.set_title('Revenue by month')
fig.savefig('revenue.png', dpi=80, metadata={'Title': 'Bar chart of revenue by month, rising from 1,007 to 12,007'})
df.to_csv('revenue_by_month.csv', index=False)
print(len(df), 'months plotted')`, true
	case strings.Contains(q, "save the squares"):
		return "with open('squares.csv', 'w') as f:\n    f.write('n,square\\n')\n    for n in range(1, 11):\n        f.write(f'{n},{n*n}\\n')\nprint('saved 10 squares')", true
	case strings.Contains(q, "sum the squares"):
		return "import csv\nrows = list(csv.DictReader(open('squares.csv')))\nprint(sum(int(r['square']) for r in rows))", true
	case strings.Contains(q, "list the files"):
		return "import os\nprint(sorted(os.listdir('.')))\nprint('evil' in open('/etc/passwd').read())", true
	}
	q, _, _ = strings.Cut(q, "\n\n[Files ") // the description of the files
	return defaultScript(q)
}

// TestCSVAttachmentReachesTheAnswer: a CSV attached to a mention is
// downloaded with the bot token, placed in /mnt/data, described to the
// model, read by the program, and its numbers reach the answer.
func TestCSVAttachmentReachesTheAnswer(t *testing.T) {
	requireModules(t, "pandas")
	h := newHarness(t, withScript(dataScript))
	d, err := h.slack.UserPosts(slacktest.Post{Channel: "C0DATA", User: "U0ALICE", Text: mention + "what is the total revenue?",
		Files: []slacktest.File{{Name: "sales.csv", Data: salesCSV()}}})
	if err != nil {
		t.Fatal(err)
	}
	msgs := h.waitReplies("C0DATA", d.TS, 1)
	answers := botMessages(msgs, isAnswer)
	if len(answers) != 1 || !strings.Contains(answers[0].Visible(), salesTotal) {
		t.Fatalf("want an answer with %s:\n%s", salesTotal, dump(msgs))
	}
	if notes := botMessages(msgs, isNotice); len(notes) != 0 {
		t.Errorf("unexpected notices:\n%s", dump(notes))
	}
	// The model was told where the file is and what it looks like.
	reqs := h.wire.requests()
	first := reqs[0].lastUser()
	for _, want := range []string{"what is the total revenue?", "/mnt/data/sales.csv (", "CSV table, attached to this message)", "| month,region,revenue\n", "| 2024-01,north,1007\n", "(13 lines in all)"} {
		if !strings.Contains(first, want) {
			t.Errorf("the question sent to the model lacks %q:\n%s", want, first)
		}
	}
	if desc := reqs[0].Tools[0].Function.Description; !strings.Contains(desc, "/mnt/data") {
		t.Errorf("tool description does not explain /mnt/data:\n%s", desc)
	}
	// Downloaded once, with the bot token (the fake refuses anything else).
	f := h.slack.Messages("C0DATA")[0].Files[0]
	if n := h.slack.Downloads(f.ID); n != 1 {
		t.Errorf("%d downloads of the attachment, want 1", n)
	}
	// The token never reached the sandbox or the model.
	for _, r := range reqs {
		for _, m := range r.Messages {
			if strings.Contains(string(m.Content), slacktest.BotToken) {
				t.Errorf("the bot token reached the model")
			}
		}
	}
}

// TestChartIsUploadedIntoTheThread: a PNG the program writes is uploaded
// into the thread with the thread's ts, through files upload v2, with the
// title the program gave it as alt text; the CSV it wrote is posted as a
// file; the card lists both.
func TestChartIsUploadedIntoTheThread(t *testing.T) {
	requireModules(t, "pandas", "matplotlib")
	h := newHarness(t, withScript(dataScript))
	d, err := h.slack.UserPosts(slacktest.Post{Channel: "C0DATA", User: "U0ALICE", Text: mention + "plot the revenue by month",
		Files: []slacktest.File{{Name: "sales.csv", Data: salesCSV()}}})
	if err != nil {
		t.Fatal(err)
	}
	msgs := h.waitReplies("C0DATA", d.TS, 1)
	var uploaded []slacktest.File
	var uploadMsg slacktest.Message
	for _, m := range msgs {
		if m.User == slacktest.BotUserID && len(m.Files) > 0 {
			uploaded, uploadMsg = m.Files, m
		}
	}
	if len(uploaded) != 2 {
		t.Fatalf("want one message with the chart and the CSV:\n%s", dump(msgs))
	}
	if uploadMsg.ThreadTS != d.TS {
		t.Errorf("files posted in thread %q, want %q", uploadMsg.ThreadTS, d.TS)
	}
	var png, csv slacktest.File
	for _, f := range uploaded {
		switch f.Name {
		case "revenue.png":
			png = f
		case "revenue_by_month.csv":
			csv = f
		}
	}
	if !bytes.HasPrefix(png.Data, []byte("\x89PNG\r\n\x1a\n")) || png.Mimetype != "image/png" {
		t.Errorf("revenue.png was not uploaded as a PNG: %d bytes, %s", len(png.Data), png.Mimetype)
	}
	if png.AltTxt != "Bar chart of revenue by month, rising from 1,007 to 12,007" {
		t.Errorf("alt text = %q, want the chart's title", png.AltTxt)
	}
	if !strings.HasPrefix(string(csv.Data), "month,region,revenue\n2024-01,north,1007\n") || csv.AltTxt != "" {
		t.Errorf("revenue_by_month.csv = %q (alt %q)", csv.Data, csv.AltTxt)
	}
	// The three steps of files upload v2, in order, naming the thread.
	gets, completes := h.slack.Calls("files.getUploadURLExternal"), h.slack.Calls("files.completeUploadExternal")
	if len(gets) != 2 || len(completes) != 1 {
		t.Fatalf("%d getUploadURLExternal and %d completeUploadExternal calls, want 2 and 1", len(gets), len(completes))
	}
	if c := completes[0]; c.Form.Get("thread_ts") != d.TS || c.Form.Get("channel_id") != "C0DATA" || c.At.Before(gets[1].At) {
		t.Errorf("completeUploadExternal = %v, want thread_ts %s after the uploads", c.Form, d.TS)
	}
	card := botMessages(msgs, isCard)[0]
	for _, want := range []string{"2 files written", "`revenue.png` (", "image posted below", "`revenue_by_month.csv` (", "posted below", "12 months plotted"} {
		if !strings.Contains(card.Visible(), want) {
			t.Errorf("card lacks %q:\n%s", want, card.Visible())
		}
	}
	if card.TS > uploadMsg.TS {
		t.Error("the files were posted before their card")
	}
	if !strings.Contains(string(card.Metadata), `"name":"revenue.png"`) {
		t.Errorf("card metadata does not record the upload: %s", card.Metadata)
	}
	// The answer can refer to the files by name.
	if got := botMessages(msgs, isAnswer)[0].Visible(); !strings.Contains(got, "revenue.png") {
		t.Errorf("answer = %q, want it to name the chart", got)
	}
}

// TestFollowUpReadsAFileTheLastRunWrote: each run's sandbox is new, but
// the thread's workspace carries files from one answer to the next — also
// across a restart, and, with the data directory lost, from the bot's own
// upload in the thread.
func TestFollowUpReadsAFileTheLastRunWrote(t *testing.T) {
	h := newHarness(t, withScript(dataScript))
	d := h.post("C0DATA", "U0ALICE", mention+"save the squares of 1 to 10", "")
	h.waitReplies("C0DATA", d.TS, 1)

	h.post("C0DATA", "U0BOB", "now sum the squares", d.TS)
	msgs := h.waitReplies("C0DATA", d.TS, 2)
	if got := botMessages(msgs, isAnswer)[1].Visible(); !strings.Contains(got, "385") {
		t.Fatalf("follow-up answer = %q, want 385:\n%s", got, dump(msgs))
	}
	reqs := h.wire.requests()
	if q := reqs[len(reqs)-2].lastUser(); !strings.Contains(q, "/mnt/data/squares.csv (") || !strings.Contains(q, "written by a run of an earlier answer in this thread") {
		t.Errorf("follow-up question lacks the file:\n%s", q)
	}

	// A restart forgets the thread, not its files.
	h.restart()
	h.post("C0DATA", "U0ALICE", mention+"sum the squares again", d.TS)
	msgs = h.waitReplies("C0DATA", d.TS, 3)
	if got := botMessages(msgs, isAnswer)[2].Visible(); !strings.Contains(got, "385") {
		t.Fatalf("answer after a restart = %q:\n%s", got, dump(msgs))
	}

	// Without the data directory, the file comes back from the bot's
	// upload of it in the thread.
	var upload string
	for _, m := range msgs {
		for _, f := range m.Files {
			if f.Name == "squares.csv" {
				upload = f.ID
			}
		}
	}
	if upload == "" {
		t.Fatalf("squares.csv was never posted:\n%s", dump(msgs))
	}
	h.stop()
	h.cfg.DataDir = t.TempDir()
	h.start()
	h.post("C0DATA", "U0BOB", "and sum the squares once more", d.TS)
	msgs = h.waitReplies("C0DATA", d.TS, 4)
	if got := botMessages(msgs, isAnswer)[3].Visible(); !strings.Contains(got, "385") {
		t.Fatalf("answer with a new data directory = %q:\n%s", got, dump(msgs))
	}
	if n := h.slack.Downloads(upload); n != 1 {
		t.Errorf("the upload was downloaded %d times, want 1", n)
	}
}

// TestOversizedAndUnsupportedFiles: each file the bot cannot use gets a
// visible message; the question is still answered, and the model is told.
func TestOversizedAndUnsupportedFiles(t *testing.T) {
	h := newHarness(t, withScript(dataScript), withConfig(func(c *bot.Config) { c.Files.FileSize = 1 << 10 }))
	big := bytes.Repeat([]byte("1,2,3\n"), 400) // 2.3 KiB
	d, err := h.slack.UserPosts(slacktest.Post{Channel: "C0DATA", User: "U0ALICE", Text: mention + "compute 6*7",
		Files: []slacktest.File{
			{Name: "big.csv", Data: big},
			{Name: "demo.mp4", Data: []byte("\x00\x00\x00\x18ftypmp42")},
			{Name: "liar.csv", Data: big, Size: 100}, // Slack reports less than it serves
			{Name: "ok.csv", Data: []byte("a\n1\n")},
		}})
	if err != nil {
		t.Fatal(err)
	}
	msgs := h.waitReplies("C0DATA", d.TS, 2)
	notes := botMessages(msgs, isNotice)
	if len(notes) != 1 {
		t.Fatalf("want one notice:\n%s", dump(msgs))
	}
	note := notes[0].Visible()
	for _, want := range []string{
		"I can't use 3 of the files you attached",
		"`big.csv`: it is 2.3 KiB, more than the 1.0 KiB I read per file",
		"`demo.mp4`: it is a video, which Python here cannot use",
		"`liar.csv`: it is more than the 1.0 KiB I read per file",
		"I'll answer with what I have.",
	} {
		if !strings.Contains(note, want) {
			t.Errorf("notice lacks %q:\n%s", want, note)
		}
	}
	if strings.Contains(note, "ok.csv") {
		t.Errorf("notice names the good file:\n%s", note)
	}
	if got := botMessages(msgs, isAnswer); len(got) != 1 || !strings.Contains(got[0].Visible(), "42") {
		t.Errorf("no answer after the notice:\n%s", dump(msgs))
	}
	if got := h.metric(t, `sandpiper_files_total{event="refused"}`); got != "3" {
		t.Errorf("refused files metric = %q, want 3", got)
	}
	files := h.slack.Messages("C0DATA")[0].Files
	if n := h.slack.Downloads(files[0].ID) + h.slack.Downloads(files[1].ID); n != 0 {
		t.Errorf("files known to be unusable were downloaded %d times", n)
	}
	q := h.wire.requests()[0].lastUser()
	for _, want := range []string{"/mnt/data/ok.csv", "[Files not available to the code:]", "- demo.mp4: it is a video"} {
		if !strings.Contains(q, want) {
			t.Errorf("question sent to the model lacks %q:\n%s", want, q)
		}
	}
}

// TestHostileFileNameStaysInTheSandbox: a name like ../../etc/passwd
// becomes a plain name in /mnt/data, on the host and in the sandbox.
func TestHostileFileNameStaysInTheSandbox(t *testing.T) {
	h := newHarness(t, withScript(dataScript))
	d, err := h.slack.UserPosts(slacktest.Post{Channel: "C0DATA", User: "U0ALICE", Text: mention + "list the files please",
		Files: []slacktest.File{
			{Name: "../../etc/passwd", Data: []byte("root:x:0:0:evil:/root:/bin/sh\n")},
			{Name: `..\..\.bashrc`, Data: []byte("evil\n")},
			{Name: "passwd", Data: []byte("second\n")},
		}})
	if err != nil {
		t.Fatal(err)
	}
	msgs := h.waitReplies("C0DATA", d.TS, 1)
	cards := botMessages(msgs, isCard)
	if len(cards) != 1 {
		t.Fatalf("want one card:\n%s", dump(msgs))
	}
	card := cards[0].Visible()
	if !strings.Contains(card, "['bashrc', 'passwd-2.txt', 'passwd.txt']") || !strings.Contains(card, "False") {
		t.Errorf("the program saw other files, or the sandbox's /etc/passwd changed:\n%s", card)
	}
	// On the host, everything stayed in the thread's workspace.
	root := filepath.Join(h.cfg.DataDir, "threads")
	var found []string
	filepath.Walk(h.cfg.DataDir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			rel, _ := filepath.Rel(h.cfg.DataDir, p)
			found = append(found, filepath.ToSlash(rel))
		}
		return nil
	})
	re := regexp.MustCompile(`^threads/C0DATA_[0-9.]+/(index\.json|files/(passwd\.txt|passwd-2\.txt|bashrc))$`)
	for _, f := range found {
		if f != "channels.json" && !re.MatchString(f) {
			t.Errorf("unexpected file in the data directory: %s", f)
		}
	}
	if _, err := os.Stat(root); err != nil {
		t.Errorf("no workspace: %v", err)
	}
	if data, _ := os.ReadFile("/etc/passwd"); bytes.Contains(data, []byte("evil")) {
		t.Fatal("the host's /etc/passwd was written")
	}
}

// TestFilesEarlierInTheThread: a CSV shared in a thread before anyone
// mentioned the bot, sent in the event as a stub Slack asks apps to look
// up (check_file_info), is read when the bot is asked in that thread.
func TestFilesEarlierInTheThread(t *testing.T) {
	requireModules(t, "pandas")
	h := newHarness(t, withScript(dataScript))
	parent, err := h.slack.UserPosts(slacktest.Post{Channel: "C0DATA", User: "U0ALICE", Text: "here are this year's sales",
		Files: []slacktest.File{{Name: "sales.csv", Data: salesCSV(), CheckFileInfo: true}}})
	if err != nil {
		t.Fatal(err)
	}
	h.post("C0DATA", "U0BOB", "thanks, looks good", parent.TS) // chatter the bot ignores
	d := h.post("C0DATA", "U0BOB", mention+"what is the total revenue?", parent.TS)
	msgs := h.waitReplies("C0DATA", parent.TS, 1)
	if got := botMessages(msgs, isAnswer); len(got) != 1 || !strings.Contains(got[0].Visible(), salesTotal) {
		t.Fatalf("want the total from the parent's file:\n%s", dump(msgs))
	}
	if q := h.wire.requests()[0].lastUser(); !strings.Contains(q, "/mnt/data/sales.csv (") || !strings.Contains(q, "attached earlier in this thread") {
		t.Errorf("question sent to the model:\n%s", q)
	}
	if n := len(h.slack.Calls("files.info")); n != 1 {
		t.Errorf("%d files.info calls, want 1 for the check_file_info stub", n)
	}
	if cards := botMessages(msgs, isCard); len(cards) != 1 || cards[0].ThreadTS != parent.TS || d.TS == parent.TS {
		t.Errorf("want one card in the thread:\n%s", dump(msgs))
	}
	// A thread without files gets no workspace on disk.
	m := h.post("C0MATH", "U0ALICE", mention+"compute 2+2", "")
	h.waitReplies("C0MATH", m.TS, 1)
	if entries, _ := filepath.Glob(filepath.Join(h.cfg.DataDir, "threads", "C0MATH_*")); len(entries) != 0 {
		t.Errorf("a thread without files has a workspace: %v", entries)
	}
}

// TestFilesOnlyMention: a bare mention with a file is a question about
// the file, not a greeting.
func TestFilesOnlyMention(t *testing.T) {
	h := newHarness(t, withScript(func(q string) (string, bool) {
		if strings.Contains(q, "tell me briefly what is in them") && strings.Contains(q, "/mnt/data/notes.txt") {
			return "print(open('notes.txt').read().upper())", true
		}
		return "", false
	}))
	d, err := h.slack.UserPosts(slacktest.Post{Channel: "C0DATA", User: "U0ALICE", Text: mention,
		Files: []slacktest.File{{Name: "notes.txt", Data: []byte("quarterly numbers\n")}}})
	if err != nil {
		t.Fatal(err)
	}
	msgs := h.waitReplies("C0DATA", d.TS, 1)
	if got := botMessages(msgs, isAnswer); len(got) != 1 || !strings.Contains(got[0].Visible(), "QUARTERLY NUMBERS") {
		t.Fatalf("want an answer about the file:\n%s", dump(msgs))
	}
}

// TestUploadRefusedIsShown: when Slack refuses the upload, the card says
// so; the file stays in the workspace for the next run.
func TestUploadRefusedIsShown(t *testing.T) {
	h := newHarness(t, withScript(dataScript))
	h.slack.FailNext("files.completeUploadExternal", slacktest.Failure{Error: "not_in_channel"})
	d := h.post("C0DATA", "U0ALICE", mention+"save the squares of 1 to 10", "")
	msgs := h.waitReplies("C0DATA", d.TS, 1)
	card := botMessages(msgs, isCard)[0].Visible()
	if !strings.Contains(card, "`squares.csv` (") || !strings.Contains(card, "not posted: Slack refused the upload (files.completeUploadExternal: not_in_channel)") {
		t.Errorf("card does not say the upload failed:\n%s", card)
	}
	h.post("C0DATA", "U0ALICE", "now sum the squares", d.TS)
	msgs = h.waitReplies("C0DATA", d.TS, 2)
	if got := botMessages(msgs, isAnswer)[1].Visible(); !strings.Contains(got, "385") {
		t.Errorf("follow-up = %q, want 385", got)
	}
}

// TestOverTheWire runs the basic flow through the OpenAI provider: a tool
// card and an answer, a failing program, and a follow-up whose request
// carries the thread's earlier turn as chat messages.
func TestOverTheWire(t *testing.T) {
	h := newHarness(t, withScript(dataScript))
	d := h.post("C0MATH", "U0ALICE", mention+"compute 6*7", "")
	msgs := h.waitReplies("C0MATH", d.TS, 1)
	if cards, answers := botMessages(msgs, isCard), botMessages(msgs, isAnswer); len(cards) != 1 || len(answers) != 1 ||
		!strings.Contains(cards[0].Visible(), "print(6*7)") || !strings.Contains(answers[0].Visible(), "The result is **42**.") {
		t.Fatalf("want a card and the answer 42:\n%s", dump(msgs))
	}
	h.post("C0MATH", "U0BOB", "now divide by zero", d.TS)
	msgs = h.waitReplies("C0MATH", d.TS, 2)
	if got := botMessages(msgs, isAnswer)[1].Visible(); !strings.Contains(got, "ZeroDivisionError") {
		t.Errorf("answer = %q", got)
	}
	reqs := h.wire.requests()
	follow := reqs[2] // the follow-up's first request
	var roles []string
	for _, m := range follow.Messages {
		roles = append(roles, m.Role)
	}
	if got, want := strings.Join(roles, " "), "system user assistant tool assistant user"; got != want {
		t.Errorf("follow-up roles = %s, want %s", got, want)
	}
	if !follow.Stream || !follow.StreamOptions.IncludeUsage || follow.Model != "fake/wire" || len(follow.Tools) != 1 || follow.Tools[0].Function.Name != agent.ExecuteCodeName {
		t.Errorf("request = %+v", follow)
	}
}

// TestEarlierRefusedFilesAreNoticedOnce: files someone attached to the
// thread before mentioning the bot are not dropped silently either; the
// notice comes once, not on every follow-up.
func TestEarlierRefusedFilesAreNoticedOnce(t *testing.T) {
	h := newHarness(t, withScript(dataScript), withConfig(func(c *bot.Config) { c.Files.FileSize = 1 << 10 }))
	parent, err := h.slack.UserPosts(slacktest.Post{Channel: "C0DATA", User: "U0ALICE", Text: "here are this week's numbers",
		Files: []slacktest.File{
			{Name: "big.csv", Data: bytes.Repeat([]byte("1,2,3\n"), 400)},
			{Name: "demo.mp4", Data: []byte("\x00\x00\x00\x18ftypmp42")},
		}})
	if err != nil {
		t.Fatal(err)
	}
	h.post("C0DATA", "U0BOB", mention+"compute 6*7", parent.TS)
	msgs := h.waitReplies("C0DATA", parent.TS, 1)
	notes := botMessages(msgs, isNotice)
	if len(notes) != 1 {
		t.Fatalf("want one notice:\n%s", dump(msgs))
	}
	for _, want := range []string{"I can't use 2 of the files in this thread", "`big.csv`", "`demo.mp4`"} {
		if !strings.Contains(notes[0].Visible(), want) {
			t.Errorf("notice lacks %q:\n%s", want, notes[0].Visible())
		}
	}
	h.post("C0DATA", "U0BOB", "compute 7*7", parent.TS)
	msgs = h.waitReplies("C0DATA", parent.TS, 2)
	if n := len(botMessages(msgs, isNotice)); n != 1 {
		t.Errorf("%d notices after a follow-up, want still 1:\n%s", n, dump(msgs))
	}
}

// TestFilesInAReplyToSomeoneElse: a file posted in the bot's thread in a
// reply addressed to another person is there for the next question.
func TestFilesInAReplyToSomeoneElse(t *testing.T) {
	requireModules(t, "pandas")
	h := newHarness(t, withScript(dataScript))
	d := h.post("C0DATA", "U0ALICE", mention+"compute 1+1", "")
	h.waitReplies("C0DATA", d.TS, 1)
	if _, err := h.slack.UserPosts(slacktest.Post{Channel: "C0DATA", User: "U0BOB", Text: "<@U0ALICE> here are the numbers", ThreadTS: d.TS,
		Files: []slacktest.File{{Name: "sales.csv", Data: salesCSV()}}}); err != nil {
		t.Fatal(err)
	}
	h.post("C0DATA", "U0ALICE", "what is the total revenue?", d.TS)
	msgs := h.waitReplies("C0DATA", d.TS, 2)
	if a := botMessages(msgs, isAnswer); len(a) != 2 || !strings.Contains(a[1].Visible(), salesTotal) {
		t.Errorf("want the file's total %s in the second answer:\n%s", salesTotal, dump(msgs))
	}
}

// TestPreviewCapIsCounted: a workbook whose preview stops at a budget (its
// sheet list nests deeper than a preview reads) is still answered; the
// model is told, and the cap is counted and logged once with the thread.
func TestPreviewCapIsCounted(t *testing.T) {
	var book bytes.Buffer
	zw := zip.NewWriter(&book)
	w, _ := zw.Create("xl/workbook.xml")
	fmt.Fprint(w, strings.Repeat("<a>", 1000))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t)
	d, err := h.slack.UserPosts(slacktest.Post{Channel: "C0DATA", User: "U0ALICE", Text: mention + "what is 6 times 7?",
		Files: []slacktest.File{{Name: "deep.xlsx", Data: book.Bytes()}}})
	if err != nil {
		t.Fatal(err)
	}
	msgs := h.waitReplies("C0DATA", d.TS, 1)
	if answers := botMessages(msgs, isAnswer); len(answers) != 1 {
		t.Fatalf("want an answer:\n%s", dump(msgs))
	}
	if first := h.wire.requests()[0].lastUser(); !strings.Contains(first, "(preview incomplete: XML nested deeper than 64 elements)") {
		t.Errorf("the model was not told the preview is incomplete:\n%s", first)
	}
	if got := h.metric(t, `sandpiper_caps_total{cap="preview"}`); got != "1" {
		t.Errorf(`sandpiper_caps_total{cap="preview"} = %q, want 1`, got)
	}
	re := regexp.MustCompile(`(?m)^.*level=WARN msg="a cap fired while preparing the question" channel=C0DATA thread=` + regexp.QuoteMeta(d.TS) + ` .*cap=preview$`)
	if n := len(re.FindAllString(h.logs.String(), -1)); n != 1 {
		t.Errorf("%d log lines for the preview cap, want 1:\n%s", n, h.logs.String())
	}
}
