package answer

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/patrickmn/go-cache"
	"github.com/slack-go/slack"

	"github.com/sandpiper-bot/sandpiper/bot/store"
	"github.com/sandpiper-bot/sandpiper/bot/stream"
	"github.com/sandpiper-bot/sandpiper/bot/thread"
	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// Question is a human's message the bot answers: a question, or a
// follow-up in a thread the bot answered in.
type Question struct {
	Channel  string
	User     string
	TS       string
	ThreadTS string // the thread to answer in
	Text     string // cleaned: no bot mention
	IM       bool
	Files    []thread.FileRef // attached to the message

	// Footer, when set, adds blocks under this answer alone, before the
	// footers every answer has (a scheduled report's changes since its
	// last time). Not carried to other replicas.
	Footer Footer `json:"-"`
	// Done, when set, is called once the question is dealt with: with
	// the answer's Info when it was answered, or an error saying why not.
	Done func(Info, error) `json:"-"`
}

// Settings are the channels' settings, as an answer reads them.
type Settings interface {
	Get(channel string) store.ChannelSettings
}

// Deps are what an [Answerer] works with: everything the answer path
// reads, calls or counts. All are required but Title and NumberCheck.
type Deps struct {
	// Slack is the Web API client (the bot token); SlackFiles is the same
	// with a timeout long enough for file transfers.
	Slack      *slack.Client
	SlackFiles *slack.Client
	// Team is the workspace's ID, for the answers' footers.
	Team string

	Agent      Agent
	Memory     *thread.Memory     // the threads' conversations
	Workspaces *thread.Workspaces // the threads' files and Python state
	Settings   Settings           // debug, state, data sources granted
	Stream     *stream.Streamer   // what answers share to stream their text
	Metrics    *Metrics
	Logger     *slog.Logger
	Limits     Limits

	// NumberCheck ends answers with the number check's line (their
	// numbers found in no run's output) when they have such numbers.
	NumberCheck bool
	// Title, when set, is called with each question taken up and the
	// thread's turns before it, once they are read (the bot names agent
	// threads after their first question). It must not block.
	Title func(q Question, earlier []thread.Turn)
	// Sources, when set, says which data sources a question's run may
	// query, given its channel's settings, and what the model should
	// be told of the others (who can grant them); nil: none.
	Sources func(q Question, settings store.ChannelSettings) (granted []string, note string)
}

// Limits bound an answer. Zero fields take the defaults in limits.go.
type Limits struct {
	Answer time.Duration // one answer, model and sandbox included
	// Status is how often the "working" status is renewed.
	Status time.Duration
	// Files bound the files read from Slack into runs and posted back.
	Files sandbox.FileLimits
	// Sandbox are the limits runs get, shown in debug cards.
	Sandbox sandbox.Limits
	// Refused is how long a file attached earlier in a thread that the
	// bot cannot use goes without being mentioned again (the thread's
	// TTL).
	Refused time.Duration
}

func (l Limits) withDefaults() Limits {
	l.Answer = cmp.Or(l.Answer, DefaultTimeout)
	l.Status = cmp.Or(l.Status, DefaultStatusInterval)
	l.Files = l.Files.WithDefaults()
	l.Refused = cmp.Or(l.Refused, defaultRefusedTTL)
	return l
}

// Answerer answers questions in their Slack threads, one [Answerer.Answer]
// call a question, and stops those it is answering when asked
// ([Answerer.Stop]). Its methods are safe for concurrent use.
type Answerer struct {
	api        *slack.Client
	fileAPI    *slack.Client
	team       string
	agent      Agent
	memory     *thread.Memory
	workspaces *thread.Workspaces
	settings   Settings
	stream     *stream.Streamer
	metrics    *Metrics
	log        *slog.Logger
	lim        Limits
	title      func(Question, []thread.Turn)
	sources    func(Question, store.ChannelSettings) ([]string, string)

	refused *cache.Cache // files attached earlier the thread was told of
	footers footers      // blocks ending each answer ([Answerer.AddFooter])
	running runningAnswers
	// sessionsOff: Slack refused agents.sessions.setStatus.
	sessionsOff atomic.Bool
}

// New returns an Answerer working with d.
func New(d Deps) (*Answerer, error) {
	switch {
	case d.Slack == nil || d.SlackFiles == nil:
		return nil, errors.New("answer: no Slack client")
	case d.Agent == nil:
		return nil, errors.New("answer: no Agent")
	case d.Memory == nil || d.Workspaces == nil || d.Settings == nil:
		return nil, errors.New("answer: no thread memory, workspaces or settings")
	case d.Stream == nil || d.Metrics == nil:
		return nil, errors.New("answer: no streamer or metrics")
	}
	lim := d.Limits.withDefaults()
	a := &Answerer{
		api: d.Slack, fileAPI: d.SlackFiles, team: d.Team, agent: d.Agent,
		memory: d.Memory, workspaces: d.Workspaces, settings: d.Settings, stream: d.Stream,
		metrics: d.Metrics, log: cmp.Or(d.Logger, slog.New(slog.DiscardHandler)), lim: lim,
		title: d.Title, sources: d.Sources,
		refused: cache.New(lim.Refused, lim.Refused/4+time.Minute),
	}
	if d.NumberCheck {
		a.AddFooter(a.numberCheckFooter)
	}
	return a, nil
}

// Answer answers q in its thread. It returns when the answer is posted,
// or the bot has said why there is none; when ctx ends first, it says
// so in the thread (unless the question was handed to another replica).
func (a *Answerer) Answer(ctx context.Context, q Question) { a.answer(ctx, q, false) }

// FollowUp answers q, a reply without a mention, if its thread is one
// the bot has answered in; otherwise (people talking among themselves)
// it does nothing.
func (a *Answerer) FollowUp(ctx context.Context, q Question) { a.answer(ctx, q, true) }
