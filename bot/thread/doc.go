// Package thread is what the bot keeps of a Slack thread between its
// answers: the conversation ([Memory]: each question, the runs that
// answered it and the answer, rebuilt from Slack's messages and their
// metadata after a restart) and the files its runs read and write
// ([Workspaces]: a directory per thread in the data directory, with an
// index, deleted when the thread has not been used for the TTL).
//
// [Messages] turns a thread's turns into the agent's conversation, so
// that a follow-up knows what was computed before.
package thread
