package bot_test

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/agent/openai"
	"github.com/sandpiper-bot/sandpiper/bot"
	"github.com/sandpiper-bot/sandpiper/bot/internal/replica/redistest"
	"github.com/sandpiper-bot/sandpiper/bot/slacktest"
	"github.com/sandpiper-bot/sandpiper/sandbox"
	"github.com/sandpiper-bot/sandpiper/sandbox/local"
)

// replicaEnv starts the test binary as a bot replica (replicaMain) rather
// than the tests: a replica a test can kill.
const replicaEnv = "SANDPIPER_TEST_REPLICA"

func TestMain(m *testing.M) {
	if os.Getenv(replicaEnv) != "" {
		os.Exit(replicaMain())
	}
	os.Exit(m.Run())
}

// replicaMain runs one bot replica against the fake Slack, model and Redis
// named in the environment, until SIGTERM or until it is killed.
func replicaMain() int {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("r", os.Getenv(replicaEnv))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	model, err := openai.New(openai.Config{
		BaseURL: os.Getenv("TEST_MODEL_URL"),
		Key:     agent.APIKey{Value: wireKey, Source: "TEST_API_KEY"},
		Model:   "fake/wire",
		Retry:   testRetry,
	})
	if err != nil {
		log.Error("model", "err", err)
		return 1
	}
	sb, err := local.New(ctx, local.Config{Python: "/usr/bin/python3", Concurrency: 2})
	if err != nil {
		log.Error("sandbox", "err", err)
		return 1
	}
	defer sb.Close()
	limits := sandbox.Limits{Timeout: 10 * time.Second}
	b, err := bot.New(ctx, bot.Config{
		BotToken: slacktest.BotToken, AppToken: slacktest.AppToken, APIURL: os.Getenv("TEST_SLACK_URL"),
		DataDir: os.Getenv("TEST_DATA_DIR"), HTTPAddr: "-", Workers: 2, PingInterval: 5 * time.Second,
		RedisURL: os.Getenv("TEST_REDIS_URL"), RedisClaimAfter: testClaimAfter, Replica: os.Getenv(replicaEnv),
		Agent: &agent.Agent{
			Model:    model,
			Tools:    []agent.Tool{agent.NewExecuteCode(sb, agent.ExecuteCodeOptions{Limits: limits})},
			MaxSteps: 4,
		},
		SandboxLimits: limits,
		Logger:        log,
	})
	if err != nil {
		log.Error("bot", "err", err)
		return 1
	}
	if err := b.Run(ctx); err != nil {
		log.Error("run", "err", err)
		return 1
	}
	return 0
}

// startReplicaProcess starts a replica in a process of its own, joined to
// c, and returns it; it is killed at the test's end.
func (c *cluster) startReplicaProcess(name string) (*exec.Cmd, *syncBuffer) {
	t := c.t
	t.Helper()
	before, _ := c.slack.Connections()
	logs := &syncBuffer{}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		replicaEnv+"="+name,
		"TEST_MODEL_URL="+c.wire.srv.URL+"/v1",
		"TEST_SLACK_URL="+c.slack.URL,
		"TEST_REDIS_URL="+c.redis.URL(0),
		"TEST_DATA_DIR="+t.TempDir(),
	)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("replica %s (process) logs:\n%s", name, logs.String())
		}
	})
	if !c.slack.WaitConnections(before+1, 20*time.Second) {
		t.Fatalf("replica %s did not connect:\n%s", name, logs.String())
	}
	return cmd, logs
}

// TestReplicaKilledMidAnswer: a replica is killed (SIGKILL) while its run
// is under way; another replica takes the question over after the
// claim-after and answers it once, saying it picked it up again, and the
// card the dead replica left running is marked interrupted.
func TestReplicaKilledMidAnswer(t *testing.T) {
	c := newCluster(t, 0, redistest.Options{})
	proc, logs := c.startReplicaProcess("doomed")
	d, err := c.slack.UserPosts(slacktest.Post{Channel: "C0KILL", User: "U0ALICE", Text: mention + "please sleep a bit"})
	if err != nil {
		t.Fatal(err)
	}
	runningCard(t, c.slack, "C0KILL", d.TS, func() string { return "replica logs:\n" + logs.String() })
	proc.Process.Kill()
	killed := time.Now()

	h := c.add("survivor")
	msgs := h.waitReplies("C0KILL", d.TS, 2) // the note and the answer
	took := time.Since(killed)
	msgs = only(t, c.slack, "C0KILL", d.TS, 1)
	if got := botMessages(msgs, isAnswer)[0].Visible(); !strings.Contains(got, "woke") {
		t.Errorf("answer = %q", got)
	}
	notes := botMessages(msgs, isNotice)
	if len(notes) != 1 || !strings.Contains(notes[0].Visible(), "picked the question up again") {
		t.Errorf("notes = %s", dump(notes))
	}
	cards := botMessages(msgs, isCard)
	if len(cards) != 2 {
		t.Fatalf("%d cards, want the interrupted one and the new one:\n%s", len(cards), dump(msgs))
	}
	if got := cards[0].Visible(); !strings.Contains(got, "Interrupted") || strings.Contains(got, "Running") {
		t.Errorf("the dead replica's card still says:\n%s", got)
	}
	if got := cards[1].Visible(); !strings.Contains(got, "woke") {
		t.Errorf("the new card says:\n%s", got)
	}
	if got := h.metric(t, "sandpiper_queue_claimed_total"); got != "1" {
		t.Errorf("sandpiper_queue_claimed_total = %q, want 1", got)
	}
	// The survivor redoes what the dead replica did, the 👀 reaction
	// among it: Slack's already_reacted says it is done, no failure. No
	// other call fails, and the question ends without its 👀.
	found := 0
	for _, c := range c.slack.Failed() {
		if c.Method == "reactions.add" && c.Error == "already_reacted" {
			found++
			continue
		}
		t.Errorf("%s failed: %s", c.Method, c.Error)
	}
	if found != 1 {
		t.Errorf("%d reactions.add found the reaction there, want 1 (the dead replica's)", found)
	}
	if got := h.metric(t, `sandpiper_errors_total{kind="slack"}`); got != "0" {
		t.Errorf(`sandpiper_errors_total{kind="slack"} = %q, want 0`, got)
	}
	if q := c.slack.Thread("C0KILL", d.TS)[0]; len(q.Reactions) != 0 {
		t.Errorf("the question ends with reactions %q", q.Reactions)
	}
	t.Logf("answered %s after the kill (claim-after %s, the run takes 3s)", took.Round(100*time.Millisecond), testClaimAfter)
}
