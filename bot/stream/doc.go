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
package stream
