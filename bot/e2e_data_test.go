package bot_test

import (
	"strings"
	"testing"

	"github.com/sandpiper-bot/sandpiper/agent/datasource"
	"github.com/sandpiper-bot/sandpiper/agent/datasource/dbtest"
	"github.com/sandpiper-bot/sandpiper/bot"
	"github.com/sandpiper-bot/sandpiper/bot/internal/replica/redistest"
	"github.com/sandpiper-bot/sandpiper/bot/slacktest"
)

// shopDB is a SQLite file of orders: north sold 1500.75 in two orders,
// south 950, west 47.125.
func shopDB(t *testing.T) string {
	return dbtest.SQLite(t, "shop.db",
		"CREATE TABLE orders (id INTEGER PRIMARY KEY, region TEXT NOT NULL, amount REAL NOT NULL)",
		"INSERT INTO orders (region, amount) VALUES ('north', 1200.5), ('north', 300.25), ('south', 950), ('west', 47.125)")
}

// openSources opens the data sources of the tests: shop (shopDB) and
// staff, another SQLite file.
func openSources(t *testing.T) *datasource.Set {
	t.Helper()
	staff := dbtest.SQLite(t, "staff.db", "CREATE TABLE salaries (name TEXT, salary REAL)")
	set, err := datasource.Open([]datasource.Config{{Name: "shop", URL: "sqlite:" + shopDB(t)}, {Name: "staff", URL: "sqlite:" + staff}}, datasource.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(set.Close)
	return set
}

const salesSQL = "SELECT region, sum(amount) AS total FROM orders GROUP BY region ORDER BY region"

// dataQueries are the queries the model makes: sales by region, and one
// of a table that does not exist.
func dataQueries(q string) (map[string]string, bool) {
	switch {
	case strings.Contains(q, "sales by region"):
		return map[string]string{"source": "shop", "sql": salesSQL, "name": "sales_by_region"}, true
	case strings.Contains(q, "misspelt"):
		return map[string]string{"source": "shop", "sql": "SELECT * FROM ordres"}, true
	}
	return nil, false
}

// salesScript reads the saved result of the sales query.
func salesScript(q string) (string, bool) {
	if strings.Contains(q, "total of the saved result") {
		return "import csv\nrows = list(csv.DictReader(open('/mnt/data/sales_by_region.csv')))\nprint(sum(float(r['total']) for r in rows))", true
	}
	return defaultScript(q)
}

// withSources gives the bot the data sources (and the model their tools).
func withSources(set *datasource.Set, dm ...string) option {
	return withConfig(func(c *bot.Config) { c.Sources, c.SourcesDM = set, dm })
}

func isQueryCard(m slacktest.Message) bool {
	return m.User == slacktest.BotUserID && strings.Contains(string(m.Metadata), "sandpiper_query")
}

// lastRequest returns the last request the model got.
func lastRequest(h *harness) chatRequest {
	reqs := h.wire.requests()
	return reqs[len(reqs)-1]
}

// notice returns the text of the thread's first notice (a command's
// reply), after waiting for it.
func notice(h *harness, channel, ts string) string {
	h.t.Helper()
	return botMessages(h.waitReplies(channel, ts, 1), isNotice)[0].Visible()
}

// TestDataQuestion: in a channel an admin granted the source, the model
// queries it; the query shows as a card (the SQL, the row count, the
// rows), the answer follows, and the number check accepts the numbers
// from the result but not one made up. A follow-up reads the saved
// result in Python, and knows the query, also after a restart. A query
// the database refuses is shown as such.
func TestDataQuestion(t *testing.T) {
	h := newHarness(t, withScript(salesScript), withSources(openSources(t)))
	h.wire.setQueries(dataQueries)
	g := h.post("C0DATA", "U0ADMIN", mention+"sources allow shop", "")
	if got := notice(h, "C0DATA", g.TS); !strings.Contains(got, "Data source `shop` is now *allowed* in this channel (by <@U0ADMIN>)") {
		t.Fatalf("the grant's reply: %q", got)
	}

	h.wire.setSay(" North leads by 98.6.")
	d := h.post("C0DATA", "U0ALICE", mention+"sales by region?", "")
	got, msgs := answerN(h, "C0DATA", d.TS, 0)
	req := h.wire.requests()[0]
	if !req.hasTool(datasource.QueryToolName) || !req.hasTool(datasource.DescribeToolName) {
		t.Errorf("the model was not given the data tools")
	}
	if sys := req.system(); !strings.Contains(sys, "- shop (SQLite, 1 tables and views)") || strings.Contains(sys, "- staff (") {
		t.Errorf("the instructions do not list shop alone:\n%s", sys)
	}
	cards := botMessages(msgs, isQueryCard)
	if len(cards) != 1 {
		t.Fatalf("%d query cards:\n%s", len(cards), dump(msgs))
	}
	card := cards[0].Visible()
	for _, want := range []string{"*Queried* `shop` (query 1) · 3 rows", "GROUP BY region ORDER BY region", "north", "1500.75", "47.125", "/mnt/data/sales_by_region.csv"} {
		if !strings.Contains(card, want) {
			t.Errorf("the query card lacks %q:\n%s", want, card)
		}
	}
	if !strings.Contains(got, "north 1500.75; south 950; west 47.125") {
		t.Errorf("answer = %q", got)
	}
	// The number check: the numbers of the result are found, the made-up
	// one is not.
	if !strings.Contains(got, "not found in any run's output: 98.6") || strings.Contains(got, "1500.75,") {
		t.Errorf("the number check's line is wrong:\n%s", got)
	}
	h.wire.setSay("")

	// A follow-up charts the saved result: it is in the workspace.
	h.post("C0DATA", "U0ALICE", "now the total of the saved result", d.TS)
	if got, msgs := answerN(h, "C0DATA", d.TS, 1); !strings.Contains(got, "2497.875") {
		t.Fatalf("follow-up answer = %q:\n%s", got, dump(msgs))
	}
	if tr := lastRequest(h).transcript(); !strings.Contains(tr, `call {"source":"shop","sql":"`+salesSQL+`"}`) {
		t.Errorf("the follow-up's history lacks the query:\n%s", tr)
	}

	// A new bot rebuilds the thread from Slack: the query is in it.
	h.restart()
	h.post("C0DATA", "U0ALICE", "the total of the saved result again", d.TS)
	if got, msgs := answerN(h, "C0DATA", d.TS, 2); !strings.Contains(got, "2497.875") {
		t.Fatalf("answer after a restart = %q:\n%s", got, dump(msgs))
	}
	tr := lastRequest(h).transcript()
	for _, want := range []string{`call {"source":"shop","sql":"` + salesSQL + `"}`, `"rows":3`, "/mnt/data/sales_by_region.csv"} {
		if !strings.Contains(tr, want) {
			t.Errorf("the rebuilt history lacks %s:\n%s", want, tr)
		}
	}

	// A query the database refuses is a result, on its card and for the
	// model.
	b := h.post("C0DATA", "U0BOB", mention+"the misspelt table", "")
	got, msgs = answerN(h, "C0DATA", b.TS, 0)
	if !strings.Contains(got, "The query failed: the database refused the statement") || !strings.Contains(got, "no such table: ordres") {
		t.Errorf("answer = %q", got)
	}
	if card := botMessages(msgs, isQueryCard)[0].Visible(); !strings.Contains(card, "*Query failed* on `shop`") || !strings.Contains(card, "no such table: ordres") {
		t.Errorf("the failed query's card:\n%s", card)
	}
}

// TestDataNotGranted: in a channel no admin granted a source, the model
// is given no data tool and no schema, and is told the command that
// grants one, which the user is told. Only admins grant, an unknown name
// gets the configured ones, and status says what is granted.
func TestDataNotGranted(t *testing.T) {
	h := newHarness(t, withSources(openSources(t)))
	h.wire.setQueries(dataQueries)
	d := h.post("C0DATA", "U0ALICE", mention+"sales by region?", "")
	got, msgs := answerN(h, "C0DATA", d.TS, 0)
	req := h.wire.requests()[0]
	if req.hasTool(datasource.QueryToolName) || req.hasTool(datasource.DescribeToolName) {
		t.Errorf("the model was given a data tool in a channel with no grant")
	}
	if sys := req.system(); strings.Contains(sys, "orders") || !strings.Contains(sys, "`@sandpiper sources allow shop`") {
		t.Errorf("the instructions show a schema, or lack the command:\n%s", sys)
	}
	if !strings.Contains(got, "An admin can allow it: `@sandpiper sources allow shop`") {
		t.Errorf("answer = %q", got)
	}
	if cards := botMessages(msgs, isQueryCard); len(cards) > 0 {
		t.Errorf("a query card in a channel with no grant:\n%s", dump(cards))
	}

	// Direct messages query no source by default (SANDPIPER_SOURCES_DM
	// unset), and the model says who decides.
	m := h.post("D0BOB", "U0BOB", "sales by region?", "")
	if got, _ := answerN(h, "D0BOB", m.TS, 0); !strings.Contains(got, "`@sandpiper sources allow shop`") {
		t.Errorf("answer in a DM = %q", got)
	}
	if req := lastRequest(h); req.hasTool(datasource.QueryToolName) || !strings.Contains(req.system(), "direct messages may not query") {
		t.Errorf("in a DM by default, the model was given the data tool, or not told why:\n%s", req.system())
	}

	b := h.post("C0DATA", "U0BOB", mention+"sources allow shop", "")
	if msgs, ok := waitEphemeral(h, "C0DATA", "U0BOB", "only workspace admins and the admins listed in sandpiper's configuration can allow or deny data sources. `shop` is *not allowed* in this channel; nothing was changed."); !ok {
		t.Fatalf("no private refusal:\n%s", dump(msgs))
	}
	for _, m := range h.slack.Thread("C0DATA", b.TS)[1:] {
		if !m.Ephemeral {
			t.Errorf("a public reply to a refused grant: %s", m.Visible())
		}
	}
	h.post("C0DATA", "U0ADMIN", mention+"sources allow shoppe", "")
	if msgs, ok := waitEphemeral(h, "C0DATA", "U0ADMIN", "There is no data source named `shoppe`. The configured sources are: `shop`, `staff`."); !ok {
		t.Fatalf("no reply naming the configured sources:\n%s", dump(msgs))
	}
	h.post("C0DATA", "U0BOB", mention+"sources status", "")
	if msgs, ok := waitEphemeral(h, "C0DATA", "U0BOB", "• `shop`: *not allowed* · :white_check_mark: SQLite, 1 tables and views readable"); !ok {
		t.Fatalf("no status:\n%s", dump(msgs))
	}

	// Allowed, the same question is answered from the database; denied
	// again, it is not.
	a := h.post("C0DATA", "U0ADMIN", mention+"sources allow shop", "")
	notice(h, "C0DATA", a.TS)
	q := h.post("C0DATA", "U0ALICE", mention+"sales by region?", "")
	if got, _ := answerN(h, "C0DATA", q.TS, 0); !strings.Contains(got, "north 1500.75") {
		t.Errorf("answer once allowed = %q", got)
	}
	h.slack.SlashCommand("C0DATA", "U0ADMIN", "/sandpiper", "sources status")
	if msgs, ok := waitEphemeral(h, "C0DATA", "U0ADMIN", "• `shop`: *allowed* by <@U0ADMIN> on "); !ok {
		t.Fatalf("no status after the grant:\n%s", dump(msgs))
	}
	n := h.post("C0DATA", "U0ADMIN", mention+"sources deny shop", "")
	if got := notice(h, "C0DATA", n.TS); !strings.Contains(got, "Data source `shop` is now *denied* in this channel") {
		t.Errorf("the denial's reply: %q", got)
	}
	q = h.post("C0DATA", "U0ALICE", mention+"sales by region?", "")
	if got, _ := answerN(h, "C0DATA", q.TS, 0); !strings.Contains(got, "`@sandpiper sources allow shop`") {
		t.Errorf("answer once denied = %q", got)
	}
}

// TestDataDirectMessages: direct messages query the sources
// SANDPIPER_SOURCES_DM names, and no other; admins cannot change that
// from Slack.
func TestDataDirectMessages(t *testing.T) {
	h := newHarness(t, withSources(openSources(t), "shop"))
	h.wire.setQueries(dataQueries)
	d := h.post("D0ALICE", "U0ALICE", "sales by region?", "")
	got, msgs := answerN(h, "D0ALICE", d.TS, 0)
	if !strings.Contains(got, "north 1500.75") || len(botMessages(msgs, isQueryCard)) != 1 {
		t.Errorf("answer in a DM = %q:\n%s", got, dump(msgs))
	}
	sys := h.wire.requests()[0].system()
	if !strings.Contains(sys, "- shop (SQLite") || strings.Contains(sys, "- staff (") || !strings.Contains(sys, "SANDPIPER_SOURCES_DM") {
		t.Errorf("the instructions in a DM:\n%s", sys)
	}
	s := h.post("D0ALICE", "U0ADMIN", "sources allow staff", "")
	if got := notice(h, "D0ALICE", s.TS); !strings.Contains(got, "In direct messages the operator chooses which sources may be queried (`SANDPIPER_SOURCES_DM`); nothing was changed.") {
		t.Errorf("a grant in a DM: %q", got)
	}

	// A channel still needs its grant.
	c := h.post("C0DATA", "U0ALICE", mention+"sales by region?", "")
	if got, _ := answerN(h, "C0DATA", c.TS, 0); !strings.Contains(got, "`@sandpiper sources allow shop`") {
		t.Errorf("answer in a channel with no grant = %q", got)
	}
}

// TestReplicasShareGrants: a grant made through one replica holds on
// another, which has its own data directory: the grants are in Redis.
func TestReplicasShareGrants(t *testing.T) {
	set := openSources(t)
	c := newCluster(t, 0, redistest.Options{})
	c.wire.setQueries(dataQueries)
	r1 := c.add("r1", func(cfg *bot.Config) { cfg.Sources = set })
	g := r1.post("C0DATA", "U0ADMIN", mention+"sources allow shop", "")
	if got := notice(r1, "C0DATA", g.TS); !strings.Contains(got, "is now *allowed*") {
		t.Fatalf("the grant's reply: %q", got)
	}
	r1.stop()

	r2 := c.add("r2", func(cfg *bot.Config) { cfg.Sources = set })
	d := r2.post("C0DATA", "U0ALICE", mention+"sales by region?", "")
	if got, msgs := answerN(r2, "C0DATA", d.TS, 0); !strings.Contains(got, "north 1500.75") || len(botMessages(msgs, isQueryCard)) != 1 {
		t.Fatalf("answer on the other replica = %q:\n%s", got, dump(msgs))
	}
	n := r2.post("C0DATA", "U0ADMIN", mention+"sources deny shop", "")
	notice(r2, "C0DATA", n.TS)
	r2.stop()

	r3 := c.add("r3", func(cfg *bot.Config) { cfg.Sources = set })
	q := r3.post("C0DATA", "U0ALICE", mention+"sales by region?", "")
	if got, _ := answerN(r3, "C0DATA", q.TS, 0); !strings.Contains(got, "`@sandpiper sources allow shop`") {
		t.Errorf("answer after the denial, on a third replica = %q", got)
	}
}

// TestSourcesNoneConfigured: with no data source configured, the command
// says how the operator adds one, and the model hears nothing of data
// sources.
func TestSourcesNoneConfigured(t *testing.T) {
	h := newHarness(t)
	h.post("C0DATA", "U0ADMIN", mention+"sources allow shop", "")
	msgs, ok := waitEphemeral(h, "C0DATA", "U0ADMIN", "No data sources are configured, so there is nothing to allow. The operator adds one with `SANDPIPER_SOURCE_<NAME>=<URL>`")
	if !ok {
		t.Fatalf("no reply:\n%s", dump(msgs))
	}
	if raw := msgs[len(msgs)-1].Text; !strings.Contains(raw, "SANDPIPER_SOURCE_&lt;NAME&gt;=&lt;URL&gt;") {
		t.Errorf("the reply's angle brackets are not escaped: %q", raw)
	}
	d := h.post("C0DATA", "U0ALICE", mention+"compute 6*7", "")
	answerN(h, "C0DATA", d.TS, 0)
	if sys := lastRequest(h).system(); strings.Contains(sys, "Data sources") {
		t.Errorf("the instructions speak of data sources:\n%s", sys)
	}
}
