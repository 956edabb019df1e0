package bot_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/bot"
	"github.com/sandpiper-bot/sandpiper/bot/internal/replica"
	"github.com/sandpiper-bot/sandpiper/bot/internal/replica/redistest"
	"github.com/sandpiper-bot/sandpiper/bot/slacktest"
	"github.com/sandpiper-bot/sandpiper/bot/thread"
)

// cluster is several bot replicas sharing one Redis, one fake Slack that
// spreads envelopes over their connections at random, and one model.
type cluster struct {
	t        *testing.T
	slack    *slacktest.Server
	wire     *wireModel
	redis    *redistest.Server
	replicas []*harness
	observer *replica.Store // the test's own, from store
	state    bool           // the replicas added keep the threads' Python state
}

// testClaimAfter is the replicas' claim-after in the tests: short, so a
// dead replica's question is taken over within seconds.
const testClaimAfter = time.Second

func newCluster(t *testing.T, n int, opts redistest.Options) *cluster {
	t.Helper()
	c := &cluster{t: t, slack: slacktest.New(t), wire: newWireModel(t, defaultScript), redis: redistest.StartWith(t, opts)}
	c.slack.PingInterval = 500 * time.Millisecond
	c.slack.Spread = true
	c.slack.AddUser(slacktest.User{ID: "U0ALICE", Name: "alice"})
	c.slack.AddUser(slacktest.User{ID: "U0BOB", Name: "bob"})
	for i := range n {
		c.add(fmt.Sprintf("r%d", i+1))
	}
	return c
}

// add starts one more replica; opts change its configuration.
func (c *cluster) add(name string, opts ...func(*bot.Config)) *harness {
	t := c.t
	h := &harness{t: t, slack: c.slack, wire: c.wire, retry: testRetry, logs: &syncBuffer{}, state: c.state}
	h.cfg = bot.Config{
		BotToken:        slacktest.BotToken,
		AppToken:        slacktest.AppToken,
		APIURL:          c.slack.URL,
		DataDir:         t.TempDir(),
		HTTPAddr:        "127.0.0.1:0",
		Workers:         2,
		Admins:          []string{"U0ADMIN"},
		PingInterval:    5 * time.Second,
		RedisURL:        c.redis.URL(0),
		RedisClaimAfter: testClaimAfter,
		Replica:         name,
		Logger:          slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})).With("r", name),
	}
	for _, o := range opts {
		o(&h.cfg)
	}
	h.start()
	t.Cleanup(func() {
		h.stop()
		if t.Failed() {
			t.Logf("replica %s logs:\n%s", name, h.logs.String())
		}
	})
	c.replicas = append(c.replicas, h)
	return h
}

// sum adds up a metric over the running replicas.
func (c *cluster) sum(series string) int {
	n := 0
	for _, h := range c.replicas {
		if h.running {
			v, _ := strconv.ParseFloat(h.metric(c.t, series), 64)
			n += int(v)
		}
	}
	return n
}

// store returns a store on the cluster's Redis, for the test to look at
// the queue as the replicas see it.
func (c *cluster) store() *replica.Store {
	c.t.Helper()
	if c.observer == nil {
		s, err := replica.Open(context.Background(), replica.Config{URL: c.redis.URL(0), Replica: "test", Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			c.t.Fatal(err)
		}
		c.t.Cleanup(func() { s.Close() })
		c.observer = s
	}
	return c.observer
}

// waitQueued waits until the message is in the shared queue (or already
// answered): its question (the bot names it channel/ts) has a state.
func (c *cluster) waitQueued(channel, ts string) {
	c.t.Helper()
	if !eventually(10*time.Second, func() bool {
		st, _, err := c.store().AnswerState(context.Background(), channel+"/"+ts)
		return err == nil && st != replica.Unknown
	}) {
		c.t.Fatalf("message %s/%s did not reach the queue", channel, ts)
	}
}

// mark returns the thread's mark: a replica that notes something new in
// the thread (a file posted in it) marks it anew.
func (c *cluster) mark(channel, threadTS string) string {
	c.t.Helper()
	m, err := c.store().ThreadMark(context.Background(), thread.Key(channel, threadTS))
	if err != nil {
		c.t.Fatal(err)
	}
	return m
}

// logged reports whether a replica logged a line holding all of words.
func (c *cluster) logged(words ...string) bool {
	for _, h := range c.replicas {
		for line := range strings.Lines(h.logs.String()) {
			if !slices.ContainsFunc(words, func(w string) bool { return !strings.Contains(line, w) }) {
				return true
			}
		}
	}
	return false
}

// only fails the test unless the thread holds exactly n answers and no
// more arrive for a while: a duplicate answer from another replica would.
func only(t *testing.T, s *slacktest.Server, channel, ts string, n int) []slacktest.Message {
	t.Helper()
	msgs, _ := s.WaitThread(channel, ts, 1500*time.Millisecond, func(ms []slacktest.Message) bool {
		return len(botMessages(ms, isAnswer)) > n
	})
	if got := len(botMessages(msgs, isAnswer)); got != n {
		t.Errorf("thread %s: %d answers, want %d:\n%s", ts, got, n, dump(msgs))
	}
	return msgs
}

// TestReplicasAnswerOnce: three replicas; every event reaches a random one
// of them and its retry another; each question is answered once, and
// every duplicate is counted once.
func TestReplicasAnswerOnce(t *testing.T) {
	c := newCluster(t, 3, redistest.Options{})
	const n = 6
	var ds []slacktest.Delivery
	for i := range n {
		d := c.replicas[0].post(fmt.Sprintf("C0R%d", i%2), "U0ALICE", mention+fmt.Sprintf("compute %d*7", i+1), "")
		if err := c.slack.Redeliver(d); err != nil {
			t.Fatal(err)
		}
		ds = append(ds, d)
	}
	for i, d := range ds {
		ch := fmt.Sprintf("C0R%d", i%2)
		c.replicas[0].waitReplies(ch, d.TS, 1)
		msgs := only(t, c.slack, ch, d.TS, 1)
		if got := botMessages(msgs, isAnswer)[0].Visible(); !strings.Contains(got, strconv.Itoa((i+1)*7)) {
			t.Errorf("answer %d = %q", i, got)
		}
		if cards := botMessages(msgs, isCard); len(cards) != 1 {
			t.Errorf("thread %d: %d cards, want 1:\n%s", i, len(cards), dump(msgs))
		}
	}
	// Each question came as four envelopes: app_mention, message, and a
	// retry of each.
	if got := c.sum("sandpiper_duplicate_events_total"); got != 3*n {
		t.Errorf("duplicates counted %d, want %d", got, 3*n)
	}
	if got := c.sum("sandpiper_questions_total"); got != n {
		t.Errorf("questions taken up %d, want %d", got, n)
	}
	busy := 0
	for _, r := range c.slack.Receivers() {
		if r > 0 {
			busy++
		}
	}
	if busy < 2 {
		t.Errorf("envelopes went to %d connections (%v); the fake should spread them", busy, c.slack.Receivers())
	}
}

// TestReplicasThreadOrder: follow-ups in one thread, spread over the
// replicas, are answered one at a time and in order, each with the
// thread's history however many replicas answered before. (Order is the
// order the messages reach the queue: two posted within a millisecond or
// two and delivered to different replicas may swap, as people do not
// post; so each follow-up here is posted once the one before is queued.)
func TestReplicasThreadOrder(t *testing.T) {
	c := newCluster(t, 2, redistest.Options{})
	h := c.replicas[0]
	d := h.post("C0ORD", "U0ALICE", mention+"compute 40+2", "")
	h.waitReplies("C0ORD", d.TS, 1)
	const n = 4
	for i := range n {
		f := h.post("C0ORD", "U0BOB", fmt.Sprintf("compute %d+1000", i), d.TS)
		c.waitQueued("C0ORD", f.TS)
	}
	msgs := h.waitReplies("C0ORD", d.TS, 1+n)
	answers := botMessages(msgs, isAnswer)
	for i := range n {
		if got := answers[1+i].Visible(); !strings.Contains(got, strconv.Itoa(i+1000)) {
			t.Errorf("answer %d = %q, want %d: out of order", i+1, got, i+1000)
		}
	}
	// Each follow-up's model call saw every earlier answer of the thread.
	for _, r := range c.wire.requests() {
		q := r.transcript()
		for i := range n {
			if strings.HasSuffix(strings.TrimSpace(q), fmt.Sprintf("compute %d+1000", i)) {
				for j := range i {
					if !strings.Contains(q, strconv.Itoa(j+1000)) {
						t.Errorf("follow-up %d's history lacks answer %d:\n%s", i, j, q)
					}
				}
			}
		}
	}
	only(t, c.slack, "C0ORD", d.TS, 1+n)
}

// TestReplicasShareSettings: debug switched on through one replica holds
// on every replica.
func TestReplicasShareSettings(t *testing.T) {
	c := newCluster(t, 2, redistest.Options{})
	h := c.replicas[0]
	c.slack.AddUser(slacktest.User{ID: "U0ADMIN", Name: "ada"})
	on := h.post("C0DBG", "U0ADMIN", mention+"debug on", "")
	h.waitReplies("C0DBG", on.TS, 1)
	const n = 6
	for i := range n {
		d := h.post("C0DBG", "U0ALICE", mention+fmt.Sprintf("compute %d*3", i), "")
		msgs := h.waitReplies("C0DBG", d.TS, 1)
		if got := botMessages(msgs, isAnswer)[0].Visible(); !strings.Contains(got, ":lady_beetle: model") {
			t.Errorf("answer %d has no debug footer:\n%s", i, got)
		}
	}
	for _, r := range c.replicas {
		if q := r.metric(t, "sandpiper_questions_total"); q == "0" {
			t.Logf("replica %s answered no question; the settings were read by the other only", r.cfg.Replica)
		}
	}
}

// TestReplicasRedisOutage: with Redis stopped, /readyz says so and
// questions wait; when it is back, the replicas are ready again and each
// question is answered once.
func TestReplicasRedisOutage(t *testing.T) {
	c := newCluster(t, 2, redistest.Options{Persist: true})
	h := c.replicas[0]
	d := h.post("C0OUT", "U0ALICE", mention+"compute 1+1", "")
	h.waitReplies("C0OUT", d.TS, 1)

	c.redis.Stop()
	for _, r := range c.replicas {
		code, body := readyz(t, r, func(code int) bool { return code == http.StatusServiceUnavailable })
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "redis unreachable") {
			t.Errorf("replica %s: /readyz = %d %q during the outage", r.cfg.Replica, code, body)
		}
	}
	waiting := h.post("C0OUT", "U0ALICE", mention+"compute 2+2", "")
	// The question waits in a replica's memory: Redis refused it once.
	if !eventually(10*time.Second, func() bool { return c.logged("enqueue failed; retrying", "C0OUT") }) {
		t.Error("no replica tried to queue the question during the outage")
	}
	c.redis.Restart()
	for _, r := range c.replicas {
		if code, body := readyz(t, r, func(code int) bool { return code == http.StatusOK }); code != http.StatusOK {
			t.Errorf("replica %s: /readyz = %d %q after Redis came back", r.cfg.Replica, code, body)
		}
	}
	msgs := h.waitReplies("C0OUT", waiting.TS, 1)
	if got := botMessages(msgs, isAnswer)[0].Visible(); !strings.Contains(got, "4") {
		t.Errorf("answer = %q", got)
	}
	only(t, c.slack, "C0OUT", waiting.TS, 1)
	only(t, c.slack, "C0OUT", d.TS, 1)
	for _, r := range c.replicas {
		if !strings.Contains(r.logs.String(), "redis unreachable") {
			t.Errorf("replica %s did not log the outage", r.cfg.Replica)
		}
	}
}

// readyz polls the replica's /readyz until done accepts its status (or
// 10s pass) and returns the last status and body.
func readyz(t *testing.T, h *harness, done func(int) bool) (int, string) {
	t.Helper()
	var code int
	var body string
	eventually(10*time.Second, func() bool {
		resp, err := http.Get("http://" + h.bot.HTTPAddr() + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		code, body = resp.StatusCode, string(b)
		return done(code)
	})
	return code, body
}

// TestReplicasBadRedis: a bad URL or an unreachable Redis stops the bot at
// start-up, naming SANDPIPER_REDIS_URL.
func TestReplicasBadRedis(t *testing.T) {
	s := slacktest.New(t)
	for _, tt := range []struct{ url, want string }{
		{"http://localhost:6379", `scheme "http"`},
		{"redis://127.0.0.1:1/0", "cannot reach Redis"},
		{"redis://:secret@127.0.0.1:1/0", "redis://:xxxxx@127.0.0.1:1/0"},
	} {
		_, err := bot.New(t.Context(), bot.Config{
			BotToken: slacktest.BotToken, AppToken: slacktest.AppToken, APIURL: s.URL,
			DataDir: t.TempDir(), HTTPAddr: "-", Agent: instantAgent{}, RedisURL: tt.url,
		})
		ce, ok := err.(*bot.ConfigError)
		if !ok || ce.Var != "SANDPIPER_REDIS_URL" || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want a ConfigError for SANDPIPER_REDIS_URL with %q", tt.url, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("the error shows the password: %v", err)
		}
	}
}

// TestReplicasStop: a stop reaching another replica than the one
// answering stops the answer there, long before its run would end.
func TestReplicasStop(t *testing.T) {
	c := newCluster(t, 2, redistest.Options{})
	h := c.replicas[0]
	d := h.post("C0STOP", "U0ALICE", mention+"please sleep a bit", "")
	h.waitRunningCard("C0STOP", d.TS)
	var other *harness
	for _, r := range c.replicas {
		if r.metric(t, "sandpiper_queue_running") == "0" {
			other = r
		}
	}
	if other == nil {
		t.Fatal("both replicas say they are answering")
	}
	asked := time.Now()
	if shared, err := other.bot.StopShared(t.Context(), "C0STOP", d.TS, d.TS, "U0BOB"); !shared || err != nil {
		t.Fatalf("StopShared = %v, %v", shared, err)
	}
	msgs := h.waitReplies("C0STOP", d.TS, 1)
	took := time.Since(asked)
	notes := botMessages(msgs, isNotice)
	if len(notes) != 1 || !strings.Contains(notes[0].Visible(), "<@U0BOB> stopped this answer") {
		t.Errorf("notes:\n%s", dump(notes))
	}
	only(t, c.slack, "C0STOP", d.TS, 0)
	if took > 2500*time.Millisecond {
		t.Errorf("stopped after %s: the run (3s) ended first", took)
	}
	t.Logf("stopped %s after the request reached the other replica", took.Round(time.Millisecond))
}

// TestDoctorRedis: doctor pings the Redis, names its version and says the
// queue's commands work, or says what is wrong.
func TestDoctorRedis(t *testing.T) {
	srv := redistest.Start(t)
	for _, tt := range []struct {
		url  string
		ok   bool
		want string
	}{
		{srv.URL(0), true, "Streams with consumer groups (XAUTOCLAIM) and scripts work; warning: append-only file is off"},
		{"redis://127.0.0.1:1/0", false, "SANDPIPER_REDIS_URL: redis://127.0.0.1:1/0: cannot reach Redis"},
	} {
		var got *bot.Check
		for _, c := range bot.Doctor(t.Context(), bot.Config{DataDir: t.TempDir(), RedisURL: tt.url}) {
			if c.Name == "Redis (SANDPIPER_REDIS_URL)" {
				got = &c
			}
		}
		if got == nil || got.OK != tt.ok || !strings.Contains(got.Detail, tt.want) {
			t.Errorf("%s: check = %+v, want ok=%v with %q", tt.url, got, tt.ok, tt.want)
		}
	}
}

// TestReplicasQueueFull: a question the shared queue has no room for gets
// a notice in its thread, not silence.
func TestReplicasQueueFull(t *testing.T) {
	bot.SetSharedQueueLimit(t, 1)
	c := newCluster(t, 1, redistest.Options{})
	h := c.replicas[0]
	busy := h.post("C0FULL", "U0ALICE", mention+"please sleep a bit", "")
	msgs, ok := c.slack.WaitThread("C0FULL", busy.TS, 20*time.Second, func(ms []slacktest.Message) bool {
		return len(botMessages(ms, isCard)) > 0
	})
	if !ok {
		t.Fatalf("no card:\n%s", dump(msgs))
	}
	d := h.post("C0FULL2", "U0ALICE", mention+"compute 1+1", "")
	msgs = h.waitReplies("C0FULL2", d.TS, 1)
	if notes := botMessages(msgs, isNotice); len(notes) != 1 || !strings.Contains(notes[0].Visible(), "too many questions") {
		t.Errorf("thread:\n%s", dump(msgs))
	}
	h.waitReplies("C0FULL", busy.TS, 1)
}

// TestReplicasShutdownHandsBack: a replica shut down (SIGTERM) with an
// answer in flight past its shutdown timeout hands the question back; the
// other replica answers it once, and the thread is not told to ask again.
func TestReplicasShutdownHandsBack(t *testing.T) {
	c := newCluster(t, 0, redistest.Options{})
	leaving := c.add("leaving", func(cfg *bot.Config) { cfg.ShutdownTimeout = 500 * time.Millisecond })
	d := leaving.post("C0BYE", "U0ALICE", mention+"please sleep a bit", "")
	msgs, ok := c.slack.WaitThread("C0BYE", d.TS, 20*time.Second, func(ms []slacktest.Message) bool {
		return len(botMessages(ms, isCard)) > 0
	})
	if !ok {
		t.Fatalf("no card:\n%s", dump(msgs))
	}
	staying := c.add("staying")
	if err := leaving.stop(); err != nil {
		t.Fatal(err)
	}
	msgs = staying.waitReplies("C0BYE", d.TS, 2) // the note and the answer
	msgs = only(t, c.slack, "C0BYE", d.TS, 1)
	for _, m := range botMessages(msgs, isNotice) {
		if strings.Contains(m.Visible(), "ask again") {
			t.Errorf("the thread was told to ask again:\n%s", dump(msgs))
		}
	}
	if got := botMessages(msgs, isAnswer)[0].Visible(); !strings.Contains(got, "woke") {
		t.Errorf("answer = %q", got)
	}
	if !strings.Contains(leaving.logs.String(), "handed a question back") {
		t.Error("the leaving replica did not hand the question back")
	}
}

// TestReplicasFilesInAReplyToSomeoneElse: a file posted in the bot's
// thread for someone else reaches the next question whichever replica
// received the file's event and whichever answers.
func TestReplicasFilesInAReplyToSomeoneElse(t *testing.T) {
	requireModules(t, "pandas")
	c := newCluster(t, 2, redistest.Options{})
	c.wire.setScript(dataScript)
	h := c.replicas[0]
	for i := range 2 {
		ch := fmt.Sprintf("C0FILE%d", i)
		d := h.post(ch, "U0ALICE", mention+"compute 1+1", "")
		h.waitReplies(ch, d.TS, 1)
		before := c.mark(ch, d.TS)
		if _, err := c.slack.UserPosts(slacktest.Post{Channel: ch, User: "U0BOB", Text: "<@U0ALICE> here are the numbers", ThreadTS: d.TS,
			Files: []slacktest.File{{Name: "sales.csv", Data: salesCSV()}}}); err != nil {
			t.Fatal(err)
		}
		// The replica that got the file marks the thread, so that the
		// one answering next reads it again.
		if !eventually(10*time.Second, func() bool { return c.mark(ch, d.TS) != before }) {
			t.Fatal("no replica marked the thread for the file")
		}
		h.post(ch, "U0ALICE", "what is the total revenue?", d.TS)
		msgs := h.waitReplies(ch, d.TS, 2)
		if a := botMessages(msgs, isAnswer); len(a) != 2 || !strings.Contains(a[1].Visible(), salesTotal) {
			t.Errorf("want the file's total %s in the second answer:\n%s", salesTotal, dump(msgs))
		}
	}
}

// TestReplicasStopClick: a click on a running card's Stop button, which
// Slack delivers to any replica's connection, stops the answer on the
// replica running it.
func TestReplicasStopClick(t *testing.T) {
	c := newCluster(t, 2, redistest.Options{})
	h := c.replicas[0]
	for i := range 3 {
		ch := fmt.Sprintf("C0CLICK%d", i)
		d := h.post(ch, "U0ALICE", mention+"please sleep a bit", "")
		card := h.waitRunningCard(ch, d.TS)
		if _, err := c.slack.ClickButton(slacktest.Click{Channel: ch, MessageTS: card.TS, User: "U0ALICE", ActionID: "sandpiper_stop"}); err != nil {
			t.Fatal(err)
		}
		msgs := h.waitReplies(ch, d.TS, 1)
		if notes := botMessages(msgs, isNotice); len(notes) != 1 || !strings.Contains(notes[0].Visible(), "<@U0ALICE> stopped this answer") {
			t.Errorf("thread %d:\n%s", i, dump(msgs))
		}
		only(t, c.slack, ch, d.TS, 0)
	}
}

// TestReplicasShareFeedback: feedback clicks reaching either replica are
// kept in Redis, and /sandpiper feedback through either replica counts
// them all.
func TestReplicasShareFeedback(t *testing.T) {
	c := newCluster(t, 2, redistest.Options{})
	h := c.replicas[0]
	c.slack.AddUser(slacktest.User{ID: "U0OWNER", Name: "olive", IsOwner: true})
	d := h.post("C0FB", "U0ALICE", mention+"compute 6*7", "")
	answer := botMessages(h.waitReplies("C0FB", d.TS, 1), isAnswer)[0]
	pos, neg := feedbackButtons(t, answer)
	for _, click := range []struct{ user, value string }{{"U0ALICE", pos}, {"U0BOB", pos}, {"U0OWNER", neg}} {
		h.clickFeedback("C0FB", answer.TS, click.user, click.value)
		if msgs, ok := waitEphemeral(h, "C0FB", click.user, "feedback"); !ok {
			t.Fatalf("no reply to %s's click:\n%s", click.user, dump(msgs))
		}
	}
	for _, r := range c.replicas {
		if _, err := os.Stat(filepath.Join(r.cfg.DataDir, "feedback.jsonl")); err == nil {
			t.Errorf("replica %s wrote feedback.jsonl: feedback belongs in Redis", r.cfg.Replica)
		}
	}
	for range 2 { // the command reaches a random replica each time
		env, err := c.slack.SlashCommand("C0FB", "U0OWNER", "/sandpiper", "feedback")
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := c.slack.WaitAck(env, 5*time.Second); !ok {
			t.Fatal("slash command not acked")
		}
	}
	tallies := func(msgs []slacktest.Message) (n int) {
		for _, m := range msgs {
			if m.EphemeralTo == "U0OWNER" && strings.Contains(m.Visible(), "helpful 2 clicks, :-1: not helpful 1 click") {
				n++
			}
		}
		return n
	}
	msgs, _ := c.slack.WaitMessages("C0FB", 10*time.Second, func(msgs []slacktest.Message) bool { return tallies(msgs) >= 2 })
	if n := tallies(msgs); n != 2 {
		t.Errorf("%d tallies with all three clicks, want 2:\n%s", n, dump(msgs))
	}
}
