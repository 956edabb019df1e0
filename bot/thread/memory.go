package thread

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/patrickmn/go-cache"
	"github.com/slack-go/slack"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/agent/datasource"
	"github.com/sandpiper-bot/sandpiper/bot/render"
	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// FilesOnlyQuestion stands for the question of a message that shares
// files without saying anything.
const FilesOnlyQuestion = "Look at the attached files and tell me briefly what is in them."

// A thread's memory.
const (
	// historyChars is the thread history budget given to the model;
	// older turns are dropped first.
	historyChars = 40000
	// threadRepliesMax bounds the messages kept to rebuild a thread (the
	// newest), threadRepliesPages the pages of 200 read to find them.
	threadRepliesMax   = 1000
	threadRepliesPages = 25
	// defaultForeignTTL is how long a thread is known not to be the
	// bot's.
	defaultForeignTTL = 10 * time.Minute
)

// Turn is one question in a thread and what the bot did about it.
type Turn struct {
	User     string // who asked
	TS       string // the question's message ts
	Question string // with the bot's mention removed
	Runs     []Run
	Answer   string // the model's answer, in Markdown; empty if it failed
	// Files are the files attached to the question; Outputs the files
	// its runs wrote that the bot posted in the thread. Later runs in the
	// thread can read both.
	Files   []FileRef
	Outputs []FileRef
	// Ignored marks a message rebuilt from Slack that the bot did not
	// respond to (people talking among themselves, a reply addressed to
	// someone else). It is not shown to the model as a question; its
	// files are still available.
	Ignored bool
}

// Run is one executeCode or runSQL call as remembered for follow-ups.
type Run struct {
	Code string
	// Source and SQL are a runSQL call's (Code is then empty): a
	// follow-up knows what was queried, and that the result is saved in
	// the workspace.
	Source, SQL string
	// Output is what the model read: for a run stdout, or for a failure
	// stdout, stderr and exit code; for a query its result.
	Output string
}

// call is the run as the model's tool call: its tool and input.
func (r Run) call() (name string, input json.RawMessage) {
	if r.SQL != "" {
		input, _ = json.Marshal(datasource.QueryInput{Source: r.Source, SQL: r.SQL})
		return datasource.QueryToolName, input
	}
	input, _ = json.Marshal(map[string]string{"code": r.Code})
	return agent.ExecuteCodeName, input
}

func (t Turn) size() int {
	if t.Ignored {
		return 0 // not shown to the model
	}
	n := len(t.Question) + len(t.Answer)
	for _, r := range t.Runs {
		n += len(r.Code) + len(r.SQL) + len(r.Output)
	}
	return n
}

// trimHistory drops the oldest turns until the history fits budget
// characters; the newest turn is always kept (its runs' outputs cut).
func trimHistory(turns []Turn, budget int) []Turn {
	total := 0
	for _, t := range turns {
		total += t.size()
	}
	for len(turns) > 1 && total > budget {
		total -= turns[0].size()
		turns = turns[1:]
	}
	if len(turns) == 1 && total > budget {
		t := turns[0]
		runs := make([]Run, len(t.Runs))
		for i, r := range t.Runs {
			runs[i] = Run{Code: render.Truncate(r.Code, budget/4), Source: r.Source, SQL: render.Truncate(r.SQL, budget/4), Output: render.Truncate(r.Output, budget/8)}
		}
		t.Runs = runs
		turns = []Turn{t}
	}
	return turns
}

// Memory keeps each thread's turns in memory for a TTL; a thread
// that is not there (after a restart or an eviction) is rebuilt from
// conversations.replies.
type Memory struct {
	api     *slack.Client
	botUser string
	cache   *cache.Cache
	foreign *cache.Cache // threads the bot has not answered in

	mu sync.Mutex // serialises rebuilds of a thread with its updates
}

// NewMemory remembers threads for ttl; api reads a thread from Slack
// when it is not remembered, and botUser is the bot's own user ID.
func NewMemory(api *slack.Client, botUser string, ttl time.Duration) *Memory {
	return &Memory{
		api:     api,
		botUser: botUser,
		cache:   cache.New(ttl, ttl/4+time.Minute),
		foreign: cache.New(defaultForeignTTL, defaultForeignTTL),
	}
}

// Key names a thread: its channel and the ts of its first message.
func Key(channel, threadTS string) string { return channel + "/" + threadTS }

// History returns the thread's turns before the message at beforeTS, and
// whether the bot has taken part in the thread. In a thread the bot has
// not taken part in, it returns no turns but the files people attached
// before beforeTS; fresh reads such a thread again instead of trusting
// what was cached about it.
func (m *Memory) History(ctx context.Context, channel, threadTS, beforeTS string, fresh bool) (turns []Turn, files []FileRef, ours bool, err error) {
	key := Key(channel, threadTS)
	if v, ok := m.cache.Get(key); ok {
		return before(v.([]Turn), beforeTS), nil, true, nil
	}
	if v, ok := m.foreign.Get(key); ok && !fresh {
		return nil, attachments(before(v.([]Turn), beforeTS)), false, nil
	}
	turns, ours, err = m.rebuild(ctx, channel, threadTS)
	if err != nil {
		return nil, nil, false, err
	}
	if !ours {
		m.foreign.SetDefault(key, turns)
		return nil, attachments(before(turns, beforeTS)), false, nil
	}
	m.cache.SetDefault(key, turns)
	return before(turns, beforeTS), nil, true, nil
}

// attachments returns the files attached to turns' questions.
func attachments(turns []Turn) []FileRef {
	var out []FileRef
	for _, t := range turns {
		out = append(out, t.Files...)
	}
	return out
}

func before(turns []Turn, ts string) []Turn {
	var out []Turn
	for _, t := range turns {
		if ts != "" && t.TS >= ts {
			break
		}
		out = append(out, t)
	}
	return out
}

// Record stores a finished turn in the thread's history.
func (m *Memory) Record(channel, threadTS string, t Turn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := Key(channel, threadTS)
	var turns []Turn
	if v, ok := m.cache.Get(key); ok {
		turns = v.([]Turn)
	} else if v, ok := m.foreign.Get(key); ok {
		// The bot's first answer in the thread: what was read of it
		// before (people's messages, kept for their files) stays.
		turns = slices.Clone(v.([]Turn))
		for i := range turns {
			turns[i].Ignored = true
		}
	}
	m.foreign.Delete(key)
	m.cache.SetDefault(key, trimHistory(withTurn(turns, t), historyChars*2))
}

// withTurn returns turns with t in its place by ts, replacing a turn for
// the same message (one rebuilt from Slack). Answers finish out of order,
// but before() needs the order of the messages.
func withTurn(turns []Turn, t Turn) []Turn {
	out := slices.DeleteFunc(slices.Clone(turns), func(x Turn) bool { return x.TS == t.TS })
	i := slices.IndexFunc(out, func(x Turn) bool { return x.TS > t.TS })
	if i < 0 {
		i = len(out)
	}
	return slices.Insert(out, i, t)
}

// NoteFiles keeps the files of a message the bot did not answer (a reply
// addressed to someone else) in a thread it is in, for later questions.
func (m *Memory) NoteFiles(channel, threadTS string, t Turn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := Key(channel, threadTS)
	t.Ignored = true
	if v, ok := m.cache.Get(key); ok {
		m.cache.SetDefault(key, withTurn(v.([]Turn), t))
	} else if v, ok := m.foreign.Get(key); ok { // the bot's first answer is under way
		m.foreign.SetDefault(key, withTurn(v.([]Turn), t))
	}
	// Otherwise not in memory: a rebuild from Slack reads it.
}

var reMention = regexp.MustCompile(`<@([UW][A-Z0-9]+)(\|[^>]*)?>`)

// HasMention reports whether text mentions someone.
func HasMention(text string) bool { return reMention.MatchString(text) }

// CleanQuestion removes the bot's mention and turns other mentions and
// Slack's entities into plain text for the model.
func CleanQuestion(text, botUser string) string {
	text = reMention.ReplaceAllStringFunc(text, func(s string) string {
		sub := reMention.FindStringSubmatch(s)
		if sub[1] == botUser {
			return ""
		}
		return "@" + sub[1]
	})
	return strings.TrimSpace(entityDecoder.Replace(text))
}

var entityDecoder = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&")

// rebuild reads the thread from Slack and reconstructs its turns from
// the humans' messages and the bot's tool cards, query cards and answers
// (recognised by their message metadata).
func (m *Memory) rebuild(ctx context.Context, channel, threadTS string) ([]Turn, bool, error) {
	var msgs []slack.Message
	cursor := ""
	for pages := 0; pages < threadRepliesPages; pages++ {
		page, _, next, err := m.api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
			ChannelID: channel, Timestamp: threadTS, Cursor: cursor, Limit: 200, IncludeAllMetadata: true,
		})
		if err != nil {
			return nil, false, fmt.Errorf("conversations.replies %s: %w", Key(channel, threadTS), err)
		}
		msgs = append(msgs, page...)
		if next == "" {
			break
		}
		cursor = next
	}
	// Keep the newest messages of a very long thread (Slack returns the
	// oldest first), but always the thread's first message.
	if len(msgs) > threadRepliesMax {
		msgs = append(msgs[:1], msgs[len(msgs)-threadRepliesMax+1:]...)
	}
	var turns []Turn
	byTS := map[string]int{} // question ts → index in turns
	answered := map[int]bool{}
	ours := false
	// The bot's uploads, by id: their download links for Turn.Outputs.
	uploads := map[string]FileRef{}
	for _, msg := range msgs {
		if msg.User == m.botUser || msg.BotID != "" {
			for _, r := range RefsOf(msg.Files) {
				uploads[r.ID] = r
			}
		}
	}
	for _, msg := range msgs {
		meta := msg.Metadata
		switch {
		case msg.User == m.botUser || msg.BotID != "":
			if msg.User == m.botUser {
				ours = true
			}
			// The bot's messages name the question they answer; older
			// ones (and other bots') belong to the latest question.
			i, ok := byTS[render.MetaString(meta, "question_ts")]
			if !ok {
				i = len(turns) - 1
			}
			if i < 0 || (meta.EventType != render.MetaToolRun && meta.EventType != render.MetaQuery && meta.EventType != render.MetaAnswer && meta.EventType != render.MetaNotice) {
				continue
			}
			t := &turns[i]
			answered[i] = true
			switch meta.EventType {
			case render.MetaToolRun:
				t.Runs = append(t.Runs, Run{Code: render.MetaString(meta, "code"), Output: render.MetaString(meta, "output")})
				files, _ := meta.EventPayload["files"].([]any)
				for _, f := range files {
					f, _ := f.(map[string]any)
					id, _ := f["id"].(string)
					name, _ := f["name"].(string)
					if id == "" || name == "" {
						continue
					}
					r := uploads[id]
					r.ID, r.Name = id, name
					t.Outputs = append(t.Outputs, r)
				}
			case render.MetaQuery:
				t.Runs = append(t.Runs, Run{Source: render.MetaString(meta, "source"), SQL: render.MetaString(meta, "sql"), Output: render.MetaString(meta, "output")})
			case render.MetaAnswer:
				if a := render.MetaString(meta, "answer"); a != "" {
					t.Answer = a
				} else {
					t.Answer = msg.Text
				}
			}
		case msg.SubType == "" || msg.SubType == slack.MsgSubTypeThreadBroadcast || msg.SubType == "file_share":
			q := CleanQuestion(msg.Text, m.botUser)
			files := RefsOf(msg.Files)
			if q == "" && len(files) > 0 {
				q = FilesOnlyQuestion
			}
			if q == "" {
				continue
			}
			byTS[msg.Timestamp] = len(turns)
			turns = append(turns, Turn{User: msg.User, TS: msg.Timestamp, Question: q, Files: files})
		}
	}
	for i := range turns {
		turns[i].Ignored = !answered[i]
	}
	return turns, ours, nil
}

// Trim returns turns trimmed to the model's history budget.
func Trim(turns []Turn) []Turn {
	return trimHistory(turns, historyChars)
}

// Messages turns the thread's turns and the new question into the
// agent's conversation. Earlier runs become executeCode calls and results,
// and earlier queries runSQL calls and results, so the model knows what it
// computed and queried before (and where the results were saved). The question ends with a
// description of the files its runs start with and notes on those left
// out ([agent.DescribeFiles]), also returned as filesDesc; caps are those
// that fired describing them.
func Messages(ctx context.Context, turns []Turn, question string, files []agent.InputFile, notes []string) (msgs []agent.Message, filesDesc string, caps []sandbox.Cap) {
	for i, t := range turns {
		if t.Ignored {
			continue // a message the bot did not respond to
		}
		msgs = append(msgs, agent.UserMessage(t.Question))
		if len(t.Runs) > 0 {
			call := agent.Message{Role: agent.RoleAssistant}
			res := agent.Message{Role: agent.RoleTool}
			for j, r := range t.Runs {
				id := fmt.Sprintf("call_h%d_%d", i+1, j+1)
				name, input := r.call()
				call.ToolCalls = append(call.ToolCalls, agent.ToolCall{ID: id, Name: name, Input: input})
				res.ToolResults = append(res.ToolResults, agent.ToolResult{CallID: id, Name: name, Content: r.Output})
			}
			msgs = append(msgs, call, res)
		}
		answer := t.Answer
		if answer == "" {
			answer = "(I did not answer this question.)"
		}
		msgs = append(msgs, agent.Message{Role: agent.RoleAssistant, Text: answer})
	}
	desc, caps := agent.DescribeFiles(ctx, files, notes)
	if desc != "" {
		question += "\n\n" + desc
	}
	return append(msgs, agent.UserMessage(question)), desc, caps
}

// Knows reports whether the thread is one the bot answers in, as far as
// this replica remembers.
func (m *Memory) Knows(channel, threadTS string) bool {
	_, ok := m.cache.Get(Key(channel, threadTS))
	return ok
}

// Forget drops the thread from memory: it is read again from Slack.
func (m *Memory) Forget(channel, threadTS string) {
	m.cache.Delete(Key(channel, threadTS))
}
