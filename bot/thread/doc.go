// Package thread is what the bot keeps of a Slack thread between its
// answers: the conversation ([Memory]: each question, the runs that
// answered it and the answer, rebuilt from Slack's messages and their
// metadata after a restart) and the files its runs read and write
// ([Workspaces]: a directory per thread in the data directory, with an
// index, deleted when the thread has not been used for the TTL).
//
// The workspace also keeps the thread's Python state, the names its runs
// left (see package sandbox): alone, as state.pickle in the thread's
// directory, written atomically, so that it goes with the workspace (the
// TTL) and survives a restart; with replicas, in a [StateStore] every
// replica reads (Redis, see package replica). A state set aside (one a
// sandbox could not read, or over its limit) is renamed
// state-aside.pickle (in Redis, state-aside:{thread}), replacing the one
// set aside before, and left for whoever wants to look at it until the
// thread expires. A channel whose admins switched state off gives its
// answers a workspace that keeps none ([Workspace.KeepNoState]).
//
// [Messages] turns a thread's turns into the agent's conversation, so
// that a follow-up knows what was computed before.
package thread
