// Package stream shows an answer's text in its Slack thread as the model
// writes it (chat.startStream, appendStream, stopStream): each step's text
// in a message of its own, closed before the step's tool card is posted,
// the answer closed with its footer. One [Streamer] per bot holds the
// rate budgets all its answers share and remembers where Slack refused to
// stream; [Answer] is an answer's [agent.Observer].
//
// When Slack will not stream (the workspace, the channel, or a call that
// failed), the answer goes the old way and [Answer.Deliver] says so: the
// bot then posts it whole. Either way an answer lands once.
//
// # What the asker sees
//
// What the asker sees in the thread, in the order it happened:
//
//  1. 👀 on the question, and the status line ("is thinking…").
//  2. If the model says something before it runs code ("Let me compute the
//     probability."), that text appears as it is written, in a message of
//     its own, which is closed before…
//  3. …the tool card: the Python, then its output; below it the run's task
//     (see Tasks), then the files and charts the run wrote.
//  4. The answer, word by word as the model writes it (at most one update
//     every half second per answer, so a few words at a time), ending with
//     its footer (debug line, feedback buttons, the number check) when the
//     model is done.
//
// Details:
//
//   - Streamed text is Slack's standard Markdown (markdown_text), so the
//     model's **bold**, lists, tables and code blocks show as written. It
//     still cannot ping or hide links: an invisible zero-width space is put
//     inside <!channel>, <!here>, <@U…>, <url|text>,
//     @here/@channel/@everyone, between "]" and "(" of [text](url) (shown as
//     typed, address visible) and in HTML entities; control characters and
//     bidi overrides are shown as stand-ins, as everywhere else. Code blocks
//     keep their text (only Slack entities are broken there).
//   - In channels the stream is addressed to the asker
//     (recipient_user_id/recipient_team_id, which Slack requires there); in
//     DMs it is not.
//   - A long answer goes on in a new message every 10,000 characters (Slack
//     holds a message to 12,000), closing and reopening a code block across
//     the cut; past four messages the rest is attached as answer.md.
//   - If the model's connection breaks off mid-answer and the step is asked
//     again, the broken message is closed and deleted (or, where Slack will
//     not delete it, replaced by a note), so the text is never shown twice.
//   - If Slack refuses chat.startStream (unknown_method,
//     not_allowed_token_type, missing_scope: for the workspace, remembered
//     with one warning in the log; channel_type_not_supported: for that
//     channel), the answer is posted whole with chat.postMessage, as before
//     streaming existed, exactly once; so is a message whose stream fails
//     half way (it is removed first).
//   - Budgets: appends SANDPIPER_STREAM_APPENDS_PER_MINUTE (default 100),
//     starts and stops 20 a minute (Tier 2). The appends' budget is shared
//     fairly: a message that starts gets its first two appends at once (a
//     reserve of the burst is kept for them), and waiting appends go in
//     order of how few their message has made, so a long answer cannot
//     starve the next. Neither the budget nor Slack holds an answer up:
//     text not appended yet when a step ends goes with chat.stopStream.
//     With several replicas, each keeps its own budget.
//   - chat.appendStream answered 429: that answer streams no more; the text
//     written from then on shows whole when the step ends (with
//     chat.stopStream), and Retry-After holds every other answer's
//     appends, except a message's first ones: each answer that starts
//     tries, and falls back the same way if Slack refuses it too. No
//     answer waits out the pause.
//   - Measured (BenchmarkFirstTokenToSlack, fake Slack on loopback, a model
//     writing 40 pieces 10 ms apart, 2 vCPUs): the model's first word
//     reaches Slack 0.2–0.4 ms (p50) after it is written, against 410–420 ms
//     when the answer is posted whole (SANDPIPER_STREAM=false, the old path)
//     in the same run; the whole answer lands no later than before (410 ms
//     per answer both ways). More than 20 answers starting within a minute
//     wait for the Tier 2 budget of chat.startStream/stopStream (30 answers
//     in 12 s: up to 2.6 s).
//
// # Tasks
//
// Each run (executeCode) and each database query (runSQL) shows as a
// task: a task_update chunk in a streamed message of its own, started
// right after the run's card ("Running Python", in progress; timeline
// display), updated in place when the run ends ("Ran Python" complete or
// "Python failed" error, with a one-line result: the first line printed,
// the exception, or the rows a query read), and stopped when the model's
// next step starts. It stands between the card and the files the run
// wrote; the model's next words go in a new message below them (text
// streamed into the task's message would stand above the run's files and
// charts, as Slack orders a thread by when a message started). Titles
// and results pass through the guard the streamed Markdown has, on one
// line, within Slack's 256 characters. Where streaming is refused nothing
// changes (no task shows); where Slack refuses a task update
// (invalid_chunks, invalid_arguments), tasks are off for the workspace
// from then on and the messages stream without them.
//
// Who sees it. In a DM the stream has no recipient and the asker, its
// only reader, sees the task move live. In a channel Slack requires one
// recipient (the asker), and only the recipient sees a stream live;
// other members see its first chunk, then nothing until it is stopped
// (reported by agentconnect, issue 1494, after testing; Slack's reference
// says no more than that the recipient is required). A stopped stream is
// an ordinary message everyone sees. Choice: tasks in DMs and channels
// alike. The task's stream is stopped as soon as the run's step is over,
// so in a channel the others see "Running Python" while it runs and its
// result right after, the same as the asker within a second; the Block
// Kit card (code, output, files) stays the full record everyone sees as
// it happens.
//
// Measured (TestChartIsNative, fake Slack on loopback, the real sandbox,
// 2 vCPUs shared, load 3–7): a task shows done 54–195 ms after the
// program ends
// (the sandbox's teardown and the result's trip through the agent
// included): it is appended before the card is updated and the files are
// posted.
//
// Not confirmed without the real service: the error codes Slack uses for a
// missing recipient, an over-long stream and a task update it refuses; that a stream's total is held
// to 12,000 characters; how Slack's Markdown treats <!here>, bare @here and
// HTML entities (the guard breaks them all either way); that chat.delete
// works on a stopped stream.
package stream
