// Package answer answers one question in its Slack thread: it reads the
// thread, places the thread's files, runs the agent, shows each run as a
// tool card with the files it wrote and each query as a query card, and
// posts (or streams) the answer
// with its footer. It also keeps the answers in flight, so that the
// Stop button and Slack's own Stop can end them.
//
// Package bot is the wiring and the event intake: it builds an
// [Answerer] from [Deps] and calls [Answerer.Answer] (or
// [Answerer.FollowUp]) for each question its intake runs, one at a time
// per thread. This package imports none of bot; everything it reads,
// calls or counts is in Deps: the Slack clients, the agent, the threads'
// memory and workspaces, the channels' settings, the streamer whose
// budget the answers share, its metrics, logger and limits.
//
// # One answer
//
// [Answerer.Answer] (answer.go) reads the thread's conversation (package
// thread) and gives up early on an empty question; it reacts 👀, keeps
// the status line (status.go) and registers the answer so that it can be
// stopped (stop.go). It places the thread's files in the workspace
// (inputs.go: the question's attachments, then earlier runs' files and
// attachments, newest first, downloaded once) and runs the agent with two
// observers chained: the answer's stream (package stream), which shows the
// model's text, then a cardPoster (poster.go), which posts a tool card
// per executeCode run and updates it when the run ends, posting the
// files the run wrote and showing CSVs as tables (outputs.go), and a
// query card per runSQL call (query.go). The run may query the data
// sources [Deps].Sources grants for the question's channel, and its
// instructions end with what the bot tells the model of the others (who
// can grant them). When the
// agent returns, cards still running are closed, the turn is recorded in
// the thread's memory, and the answer is delivered: through its stream, or
// posted whole when Slack would not stream it, ending with the blocks of
// the [Footer]s (footer.go: the number check's, then the bot's feedback
// buttons). A stopped answer, a failed one or one cut short by shutdown
// gets a notice instead ([Answerer.Notice]).
//
// # Stopping
//
// Each answer runs under a context registered by its [Key] (channel,
// thread, question). [Answerer.Stop] cancels it with the user who stopped
// it as the cause: the sandbox kills the run, the agent asks the model
// nothing more, and the answer marks its card and tells the thread. The
// bot decides who may stop an answer and, with replicas, sends the stop
// to the replica running it; that replica's context ends with a
// replica.StopError, read the same way.
//
// # Adding to an answer
//
//   - A card for another tool: a case in cardPoster's ToolCallStarted and
//     ToolCallFinished beside executeCode's and runSQL's (query.go), with
//     its rendering in package render.
//   - Something every answer ends with: a [Footer], added with
//     [Answerer.AddFooter].
//   - Something an answer needs from outside (as the sources a channel
//     may query): a field of [Deps], read where the agent's RunOptions
//     are built in answer.go.
//   - Progress shown in the streamed message (task updates): package
//     stream, which is the first observer of every run.
//   - Another kind of file shown natively (a chart): deliver and postTable
//     in outputs.go, with the blocks in package render.
package answer
