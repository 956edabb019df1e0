package stream

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/sandpiper-bot/sandpiper/bot/internal/slackapi"
	"github.com/sandpiper-bot/sandpiper/bot/render"
	"github.com/slack-go/slack"
)

// streamResult is how a streamed message ended.
type streamResult int

const (
	streamClosed        streamResult = iota // its text is shown, the stream stopped
	streamRefused                           // Slack would not start it: nothing shown
	streamBroken                            // part of its text is shown, then a call failed
	streamStoppedByUser                     // the user stopped it in Slack
)

// message is one step's streamed text: a Slack message (or several, for
// a long text) fed by a goroutine of its own, so that the model's stream
// never waits on Slack. Text added is sent as it comes, at most one
// append per [streamAppendInterval] per message and within the
// workspace's budgets; what piles up meanwhile goes in the next call.
//
// Neither the budget nor Slack's rate limit holds the step up: when the
// step ends, what is not shown yet goes with the calls that end the
// message's parts (chat.stopStream, which has a budget of its own), not
// in appends; and once Slack answers an append 429, the message appends
// no more: the rest of its text shows whole when the step ends.
type message struct {
	st      *Streamer
	channel string
	thread  string
	user    string // the asker: the stream's recipient in channels
	im      bool
	ctx     context.Context
	cancel  context.CancelFunc
	wake    chan struct{}
	done    chan struct{}
	ending  chan struct{} // closed when the step ends: an append waiting for the budget gives up
	// footer returns the blocks shown under the text when it closes,
	// given the ts of the message they go in; nil: none.
	footer   func(ts string) []slack.Block
	firstOut time.Time // when the first text reached Slack

	mu      sync.Mutex
	pending string
	tasks   []slack.TaskUpdateChunk // task updates to send
	closing bool

	// The sender's, until done is closed.
	ts    string // the open part; "" before it starts
	shown int    // characters in the open part, held ones included
	text  strings.Builder
	held  string // the open part's text that goes with the call that stops it
	// heldTasks are task updates that go with the call that stops the
	// open part.
	heldTasks []slack.TaskUpdateChunk
	parts     []string // every part's ts, the open one last
	cut       bool     // past render.AnswerMaxParts: the rest is not shown
	appends   int      // appends made
	limited   bool     // Slack answered an append 429: no more appends
	err       error
	stopped   bool // the user stopped the stream
}

func (s *Answer) openMsg(ctx context.Context) *message {
	g := &message{
		st: s.st, channel: s.t.Channel, thread: s.t.ThreadTS, user: s.t.User, im: s.t.IM,
		wake: make(chan struct{}, 1), done: make(chan struct{}), ending: make(chan struct{}),
	}
	g.ctx, g.cancel = context.WithCancel(context.WithoutCancel(ctx))
	go g.run()
	return g
}

// add queues text to send.
func (g *message) add(text string) {
	if text == "" {
		return
	}
	g.mu.Lock()
	g.pending += text
	g.mu.Unlock()
	g.signal()
}

func (g *message) signal() {
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// close sends what is left, then stops the stream with opts (and the
// footer) and says how the message ended.
func (g *message) close(ctx context.Context, opts []slack.MsgOption) streamResult {
	g.mu.Lock()
	if !g.closing {
		g.closing = true
		close(g.ending)
	}
	g.mu.Unlock()
	g.signal()
	select {
	case <-g.done:
	case <-time.After(streamCloseTimeout):
		g.cancel()
		<-g.done
	}
	defer g.cancel()
	switch {
	case g.stopped:
		return streamStoppedByUser
	case g.err != nil && len(g.parts) == 0:
		return streamRefused
	case g.err != nil:
		g.stopPart(nil) // best effort: leave no stream open
		return streamBroken
	}
	rest := g.held // the sender is done: the rest of the text is held
	g.held = ""
	plain := opts
	if rest != "" {
		plain = append(slices.Clip(opts), slack.MsgOptionMarkdownText(rest))
	}
	withTasks := len(g.heldTasks) > 0 && !g.st.tasksOff.Load()
	opts = g.stopOpts(opts, rest) // with the task updates held
	var footer []slack.Block
	if g.cut {
		footer = append(footer, render.ContextBlock(":scissors: The answer is too long for Slack; the whole answer is attached as `answer.md`."))
	}
	if g.footer != nil {
		footer = append(footer, g.footer(g.ts)...)
	}
	footer = footer[:min(len(footer), render.MaxBlocks)]
	stop := opts
	if len(footer) > 0 {
		stop = append(slices.Clip(opts), slack.MsgOptionBlocks(footer...))
	}
	err := g.stopPart(stop)
	if slackapi.Refused(err) && len(footer) > 0 {
		// Slack refused the footer's blocks: close without them.
		g.st.log.Warn("slack refused the blocks under a streamed answer; closing without them", "err", slackapi.Explain(err))
		err = g.stopPart(opts)
	}
	if withTasks && tasksRefused(err) {
		// Slack refused the task updates: close with the text alone.
		g.st.refuseTasks(err)
		err = g.stopPart(plain)
	}
	if err != nil {
		if isStoppedByUser(err) {
			return streamStoppedByUser
		}
		g.st.log.Warn("could not stop a streamed message", "ts", g.ts, "err", slackapi.Explain(err))
	}
	return streamClosed
}

func isStoppedByUser(err error) bool {
	se, ok := errors.AsType[slack.SlackErrorResponse](err)
	return ok && se.Err == "stopped_by_user"
}

// run sends the text added until the message is closed.
func (g *message) run() {
	defer close(g.done)
	var last time.Time
	for {
		g.mu.Lock()
		pending, closing, tasks := g.pending, g.closing, len(g.tasks) > 0
		g.mu.Unlock()
		if closing {
			// The step is over: the rest needs no append. It goes with
			// the calls that start and stop the parts, the last part's
			// with close's.
			if err := g.putTasks(g.takeTasks(), true); err != nil {
				g.err, g.stopped = err, isStoppedByUser(err)
				return
			}
			if err := g.send(g.take(), true); err != nil {
				g.err, g.stopped = err, isStoppedByUser(err)
			}
			return
		}
		if pending == "" && !tasks || g.limited {
			// Nothing to send, or no more appends: wait for text, or
			// for the end.
			select {
			case <-g.wake:
			case <-g.ctx.Done():
				g.err = g.ctx.Err()
				return
			}
			continue
		}
		if g.ts != "" {
			if d := time.Until(last.Add(streamAppendInterval)); d > 0 {
				t := time.NewTimer(d)
				select {
				case <-t.C:
				case <-g.wake: // more text, or closing: look again
					t.Stop()
					continue
				case <-g.ctx.Done():
					t.Stop()
					g.err = g.ctx.Err()
					return
				}
			}
		}
		if err := g.putTasks(g.takeTasks(), false); err != nil {
			g.err, g.stopped = err, isStoppedByUser(err)
			return
		}
		if err := g.send(g.take(), false); err != nil {
			g.err, g.stopped = err, isStoppedByUser(err)
			return
		}
		last = time.Now()
	}
}

// take returns the text added and not yet taken.
func (g *message) take() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	text := g.pending
	g.pending = ""
	return text
}

// send shows text: in the open part while it has room, then in new parts.
// With final (the step is over), text for an open part is held for the
// call that stops the part, not appended.
func (g *message) send(text string, final bool) error {
	for text != "" && !g.cut {
		room := streamMessageChars - g.shown - len("\n```")
		head, rest := text, ""
		if utf8.RuneCountInString(text) > room {
			head, rest = cutForPart(text, room)
		}
		if head != "" {
			if err := g.put(head, final); err != nil {
				return err
			}
		}
		if rest == "" {
			return nil
		}
		// The part is full: close it (and a code block open in it) and go
		// on in a new one.
		var closer, opener string
		if fenceOpen(g.text.String()) {
			closer, opener = "\n```", "```\n"
		}
		if len(g.parts) >= render.AnswerMaxParts {
			// The last part stays open for the footer; the rest of the
			// text is attached when the answer ends.
			g.cut = true
			if closer != "" {
				return g.put(closer, final)
			}
			return nil
		}
		if err := g.stopPart(g.stopOpts(nil, g.held+closer)); err != nil {
			return err
		}
		g.ts, g.shown, g.held = "", 0, ""
		g.text.Reset()
		text = opener + rest
	}
	return nil
}

// put starts the open part with text, or appends text to it, or holds
// text for the call that stops it: when final, when Slack rate-limited
// an append, and when the step ends while the append waits for the
// budget.
func (g *message) put(text string, final bool) error {
	chunk := slack.MsgOptionChunks(slack.NewMarkdownTextChunk(text))
	switch {
	case g.ts == "":
		opts := append(g.startOpts(), chunk)
		var ts string
		err := g.st.call(g.ctx, g.st.budgets.start, func() (err error) {
			_, ts, err = g.st.api.StartStreamContext(g.ctx, g.channel, opts...)
			return err
		})
		if err != nil {
			if len(g.parts) == 0 && !isStoppedByUser(err) {
				g.st.refused(g.channel, err)
			}
			return err
		}
		g.ts = ts
		g.parts = append(g.parts, ts)
	case final || g.limited || g.held != "" || len(g.heldTasks) > 0:
		g.held += text
	default:
		held, err := g.append(chunk)
		if err != nil {
			return err
		}
		if held {
			g.held += text
		}
	}
	g.shown += utf8.RuneCountInString(text)
	g.text.WriteString(text)
	return nil
}

// startOpts are the options of the call that starts a part.
func (g *message) startOpts() []slack.MsgOption {
	opts := []slack.MsgOption{slack.MsgOptionTS(g.thread)}
	if !g.im {
		// Slack requires the recipient when streaming in a channel.
		opts = append(opts, slack.MsgOptionRecipientUserID(g.user), slack.MsgOptionRecipientTeamID(g.st.teamID))
	}
	return opts
}

// append sends chunk to the open part, within the append budget, ahead
// of the messages that appended more. It reports held, the chunk not
// sent, when the step ends while it waits for the budget, and when Slack
// answers 429: Retry-After then holds every message's appends, and this
// message appends no more.
func (g *message) append(chunk slack.MsgOption) (held bool, err error) {
	if err := g.st.budgets.append.wait(g.ctx, g.appends, g.ending); errors.Is(err, errGaveUp) {
		return true, nil
	} else if err != nil {
		return false, err
	}
	_, _, err = g.st.api.AppendStreamContext(g.ctx, g.channel, g.ts, chunk)
	if wait, limited := rateLimited(err); limited {
		g.st.log.Debug("slack rate-limited an append; this message shows the rest of its text when it ends, and every answer's appends pause", "retry_after", wait)
		g.st.budgets.append.pause(wait)
		g.limited = true
		return true, nil
	}
	if err == nil {
		g.appends++
	}
	return false, err
}

// stopPart stops the open part's stream with opts.
func (g *message) stopPart(opts []slack.MsgOption) error {
	if g.ts == "" {
		return nil
	}
	ctx, cancel := slackapi.Context(g.ctx)
	defer cancel()
	return g.st.call(ctx, g.st.budgets.stop, func() error {
		_, _, err := g.st.api.StopStreamContext(ctx, g.channel, g.ts, opts...)
		return err
	})
}

// cutForPart cuts text to fit n characters, at a line break in the second
// half of the room when there is one.
func cutForPart(text string, n int) (string, string) {
	head, rest := render.CutRunes(text, max(n, 0))
	if i := strings.LastIndexByte(head, '\n'); i >= len(head)/2 {
		head, rest = head[:i+1], head[i+1:]+rest
	}
	return head, rest
}

// fenceOpen reports whether Markdown text ends inside a fenced code block.
func fenceOpen(text string) bool {
	open := false
	for _, line := range strings.Split(text, "\n") {
		t := strings.TrimLeft(line, " ")
		if len(line)-len(t) <= 3 && (strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")) {
			open = !open
		}
	}
	return open
}
