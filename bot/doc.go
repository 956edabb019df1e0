// Package bot is sandpiper's Slack side. It connects over Socket Mode, acks
// every envelope at once, and answers @mentions, direct messages and
// follow-ups in threads it has answered in. Each answer shows a tool card
// per executeCode run (the Python, then its output) and ends with the
// model's answer converted to Slack's mrkdwn. Threads are remembered for a
// TTL and rebuilt from Slack after a restart. Admins switch debug on per
// channel, and the threads' Python state off (state on|off|status), and
// grant the team's data sources to a channel (sources allow NAME | deny
// NAME | status, sources.go); the settings are kept in the data directory
// (or Redis). A question's run may query only the sources granted to its
// channel (in a DM, those SANDPIPER_SOURCES_DM names); each runSQL call
// shows as a query card.
//
// Files attached in a thread are downloaded into the thread's workspace
// (in the data directory) and placed in every run's /mnt/data; the files
// runs write there are posted back into the thread (images with alt text)
// and kept for the thread's later runs.
//
// The model and the sandbox are behind [Agent], which [*agent.Agent]
// implements; the answer path (package answer) observes each run
// ([agent.Observer]) to show its tool cards, and gives it the thread's
// workspace ([agent.Workspace]).
//
// # How a mention travels
//
// The socket (internal/socket) reads the envelope and acks it; events.go
// routes it (a question, a follow-up, a command, or nothing) to a worker
// (intake.go: this process's pool, or the queue replicas share in Redis,
// internal/replica, replicas.go); the worker runs a command itself
// (commands.go) and hands a question to the [answer.Answerer] that New
// built. The answerer rebuilds the thread's conversation (package
// thread), places its files in the thread's workspace and calls the
// agent's Run with the answer's stream (package stream) and its card
// poster as observers; the agent asks the model, and its executeCode tool
// runs the code in a fresh sandbox with the workspace's files, keeping
// what the run writes; the poster posts and updates a tool card per run
// (package render) and the files; the stream closes the answer with its
// footer: the number check, and the feedback buttons (feedback.go, kept
// by package store). Package answer's documentation follows a question
// through it.
//
// Clicks come the same way (actions.go routes them by action_id): the
// Stop button (stop.go: who may stop, and through which replica; the
// answerer stops its own answers) and the feedback buttons
// (feedback.go). agentview.go handles the agent view's events and titles
// its threads.
//
// The rooms: answer (the answer path: one question from the thread read
// to the answer posted, and the answers in flight, with its dependencies
// in answer.Deps), render (Slack's formats: mrkdwn, cards, tables; no
// calls), thread (a thread's memory and workspace), store (settings,
// feedback, admins, and their Redis twins), stream (streamed answers),
// internal/replica (what replicas share through Redis), internal/socket
// (Socket Mode), internal/slackapi (the Web API client). None imports
// bot; package bot is the wiring (bot.go: New builds the rooms and hands
// each what it needs) and the event intake.
//
// # Socket Mode
//
// The bot speaks Socket Mode with a client of its own (internal/socket),
// not slack-go's, for two reasons. Every envelope is acknowledged the
// moment it is read, before it is parsed: slack-go's client does not hand
// a payload it fails to parse over as a request to ack, so Slack sends it
// again and again. And a disconnect warning from Slack opens the next
// connection before the old one closes, where slack-go's client closes the
// old one first, and events sent meanwhile wait for a redelivery.
// link_disabled (Socket Mode turned off) stops the bot with a message
// saying so instead of reconnecting forever. The Web API calls go through
// slack-go.
//
// SIGTERM or Ctrl-C stops taking new events, finishes answers in flight
// (up to SANDPIPER_SHUTDOWN_TIMEOUT) and exits 0.
//
// # Files in, charts out
//
// Files attached to a question (or earlier in the thread) are downloaded
// with the bot's token (scope files:read), on the host only, and placed in
// the sandbox's working directory, /mnt/data, under safe names
// (../../etc/passwd becomes passwd.txt; a second data.csv becomes
// data-2.csv). A file it cannot use (too large, a video, a Google Drive
// link, a Slack canvas …) gets a message in the thread saying which and
// why, once, also for files attached earlier in the thread; the question
// is still answered.
//
// Every file the program writes in /mnt/data comes back: images (PNG,
// JPEG, GIF, WebP, SVG) are posted into the thread as images, with the
// title the program saved in them as alt text (plt.savefig('chart.png',
// metadata={'Title': '…'})), other files (CSV, XLSX, JSON, TXT …) as files,
// one message per run, through files upload v2
// (files.getUploadURLExternal, the upload, files.completeUploadExternal
// with the thread's ts). The tool card lists each file and what became of
// it (posted, unchanged, over a limit); files whose names start with "."
// are not posted.
//
// Each run is a fresh sandbox, but a thread has a workspace: the files
// attached in it and those its runs wrote are copied into every later
// run, so "now plot it by month" works; and, unless the channel switched
// it off, the variables its runs left are restored in every later run
// (package thread keeps them). A tool card says which variables a run
// could not keep, or restore, and why. Workspaces live in
// SANDPIPER_DATA_DIR/threads/ and are deleted after SANDPIPER_THREAD_TTL
// without use; a bot that lost its data directory reads the files back
// from the thread (its own uploads are recorded in the tool cards'
// metadata).
//
// # What a thread shows
//
// For "@sandpiper load sales.csv and give me revenue by region as a
// table":
//
//  1. 👀 on the question, and a status line while the bot works.
//  2. A tool card per run: the Python, then (when it ends) its output and
//     the files it wrote. A query on a data source shows as a query card
//     (render.QueryCard): the source, the SQL, then the row count, the
//     duration, the first 20 rows as a data_table and the CSV in
//     /mnt/data holding the whole result; or the database's error, which
//     the model reads too.
//  3. The files the run wrote, posted in the thread. A CSV (or TSV) is also
//     shown beside its upload as a native Slack table (data_table), sortable
//     in the client: numbers as numbers, the file's name as its caption, and
//     a line under it such as ":bar_chart: `by_region.csv` · 4 rows · 2
//     columns". A bigger file shows its first 100 rows and 20 columns and
//     says so ("first 100 of 12,345 rows · first 20 of 31 columns · the
//     whole file is attached above"); cells are cut at 200 characters, and a
//     table holds at most 9,000 characters of cells (Slack's published
//     limits disagree, 101 or 201 rows, so the bot keeps to the strictest:
//     100 rows and the header, 20 columns, page_size ≤ 100). At most 5
//     tables an answer; the files are posted anyway. The model is told that
//     a DataFrame saved with df.to_csv('name.csv', index=False) becomes a
//     table.
//  4. The answer. When it states numbers found nowhere in the conversation
//     (not in this turn's runs (code, output, errors) and queries (the
//     SQL, the result the model read, the rows the card shows), the files' previews,
//     the question or the thread's earlier turns), a line under it lists
//     them: ":warning: not found in any run's output: 43.7". Rounding,
//     thousands separators, percentages of fractions (0.5155 → "51.55%"),
//     scientific notation and "1.23 million" count as found; small counting
//     numbers (0–10), years, dates, list markers and numbers one step of
//     arithmetic from shown ones are never listed (agent/numcheck says
//     exactly what is accepted). SANDPIPER_NUMBER_CHECK=off turns it off.
//  5. Slack's feedback buttons (labelled "Helpful" and "Not helpful") end
//     every answer. A click thanks the clicker privately, counts in
//     sandpiper_feedback_total{rating="positive"|"negative"} and is
//     appended to SANDPIPER_DATA_DIR/feedback.jsonl, one JSON line per
//     click: channel, thread_ts, message_ts, user (the clicker's Slack user
//     ID), rating, model and time. Clicks on old answers count too (each
//     button carries its rating and model). The file is readable by the
//     bot's user only; when it would pass 10 MiB (about 50,000 clicks) it is
//     renamed feedback.jsonl.1, replacing the previous one, so the bot keeps
//     the latest 10–20 MiB of clicks and nothing older; there is no age
//     limit; delete the files to forget them. An admin types "/sandpiper
//     feedback" in a channel to see its tally over the clicks kept (":+1:
//     helpful 12 clicks, :-1: not helpful 3 clicks (80% helpful)"); others
//     are told it is for admins. Each click is a record: someone who clicks
//     "Helpful" and then "Not helpful" counts once each way. With replicas
//     sharing Redis (SANDPIPER_REDIS_URL), clicks go to Redis instead of the
//     file: the latest 100,000 records and a per-channel tally, the same
//     user IDs (see internal/replica).
//
// # Streamed answers
//
// An answer's text streams into the thread as the model writes it: see
// package stream.
//
// # Stopping an answer
//
// While a run is going, its tool card ends with a red Stop button. When
// the person who asked (or an admin: SANDPIPER_ADMINS, or a workspace admin
// or owner) clicks it:
//
//  1. the sandbox run is killed at once, and the model is not asked
//     anything more (BenchmarkStop, local sandbox and the fake Slack on
//     loopback: 15 ms median and 49 ms at most from the click to the
//     updated card, beside 4 ms for a click answered with a refusal);
//  2. the card turns into "🛑 Stopped (run 1) by @alice after 2.1 s.
//     Nothing more was run or asked of the model.", without its button;
//  3. the thread says "🛑 @alice stopped this answer…", and the 👀 reaction
//     goes. The thread goes on: the next question is answered as usual.
//
// Anyone else who clicks it sees, only to them, "Only the asker or an admin
// can stop this answer.", and the answer goes on. A click that arrives
// after the answer finished (a client still showing the running card)
// changes nothing and says "This answer has already finished". In the
// agent view, Slack's own Stop on a streaming answer (the
// agent_session_stopped event) does the same as the button. So that
// Slack shows it while an answer runs (not only on a streaming message),
// each answer sets the thread's agent session to processing
// (agents.sessions.setStatus, chat:write; Slack creates the session) and
// back to active when it ends; an app Slack does not take as an agent
// has it refused once, logged, and goes on with the button alone. The
// status line under the thread cycles through loading messages
// (assistant.threads.setStatus's loading_messages, which slack-go joins
// with commas: none holds one).
//
// # The agent view (DMs)
//
// The manifest declares Slack's agent view (features.agent_view, which
// replaces assistant_view), so the app's DM has Slack's agent composer.
// When it is opened (the app_home_opened event with tab: messages; apps
// still on the older assistant view get assistant_thread_started for each
// new thread instead, and both are handled), sandpiper suggests four
// prompts: a math problem, a simulation with a chart, "Analyse a CSV I
// attach" and a calculation to check. After the first question in a
// thread, the thread is titled with that question's first line.
//
// What the manifest asks for, and why:
//
//   - scope assistant:write: assistant.threads.setSuggestedPrompts and
//     assistant.threads.setTitle (optional, see below);
//   - event app_home_opened: a user opened the app's messages tab: set the
//     suggested prompts;
//   - event assistant_thread_started: a new thread in the older assistant
//     view: set its suggested prompts;
//   - event agent_session_stopped: Slack's own Stop: stop the answer
//     running in that thread.
//
// Adding a scope or an event to an installed app means reinstalling it
// (Install App → Reinstall to Workspace, or re-create it from
// manifest.yaml); Slack then issues the token with the new scopes (the
// xoxb- value usually stays the same). Until then, the bot works as before
// without the agent view's extras: at start it logs one warning ("agent
// view: no suggested prompts or thread titles: the bot token lacks the
// assistant:write scope…"), and sandpiper doctor prints a "warn Slack scope
// assistant:write" line, not a failure. If Slack refuses one of these
// calls later (missing_scope, not_allowed…), the bot warns once and stops
// making them.
//
// Not confirmed without a real workspace (the tests run against the
// in-repo fake Slack, slacktest, built from Slack's documentation): that
// app_home_opened arrives for the agent view's messages tab as documented,
// and that prompts set without thread_ts show there (Slack's reference says
// an agent app's call with thread_ts silently fails); that
// assistant.threads.setTitle works in agent-view DMs (it is documented for
// assistant threads); the title length Slack accepts (the bot keeps titles
// to 60 characters); whether the agent view's own Stop is shown for answers
// that are not streamed; and that a mention in an edited card notifies no
// one.
//
// # Scheduled reports
//
// Under each answer in a channel a "Repeat…" button (and "repeat" alone in
// its thread) opens a form: how often, the time, the time zone (the
// user's own in Slack to begin with) and the channel; "repeat every monday
// 9:00" in the thread sets one up in words. The form's submission is
// answered in its ack (the socket holds a view submission's ack for the
// bot's response): a cron line that never fires or fires more often than
// SANDPIPER_SCHEDULE_MIN_INTERVAL comes back as an error under its field.
// Every replica runs a scheduler (package schedule, schedules.go); each
// time fires once across replicas, posting a new message in the channel
// and answering the question in its thread through the answer path, with
// a footer that compares the figures the runs and queries backed with
// those of the last report. "schedules" lists a channel's; its owner or an
// admin pauses, resumes or deletes one. A report whose channel was
// archived or whose owner left pauses itself and tells the owner and the
// admins by DM.
//
// # Benchmarks
//
// go test -run '^$' -bench . ./bot/ runs BenchmarkFirstTokenToSlack,
// BenchmarkStop and the replicas' BenchmarkReplicas (see internal/replica),
// among others, against the fake Slack (slacktest) on loopback.
package bot
