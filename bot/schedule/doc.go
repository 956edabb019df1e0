// Package schedule keeps the questions a channel asked to have answered
// again at set times ("repeat every monday 9:00") and fires each of their
// times once, across replicas.
//
// A [Schedule] holds the question, its channel and owner, and its plan: a
// cron line of five fields (parsed by robfig/cron/v3) in an IANA time
// zone, so that a 9:00 report stays at 9:00 local time across daylight
// saving changes. [Every] is the plan as a person sets it (daily,
// weekdays, a day of the week, monthly, or a cron line), [ParseWhen] reads
// it from words and [Describe] says it back.
//
// A [Scheduler] runs in every replica. It reads the schedules from a
// [Store] (a file for a bot alone, Redis for replicas; package bot/store)
// every [DefaultPoll] and at each schedule's next time; for a time that
// came it asks the Store to claim it, which succeeds once across
// processes, and the replica that won answers it through its [Firer].
// A time missed while no replica ran is made up on start if it is at most
// [Limits].Grace late, and skipped (the owner told) otherwise; of several
// missed times only the latest is made up. A failed fire is tried again
// after 1, 4 and 16 minutes ([DefaultBackoff]) and, after the last try,
// the owner is told; a [*PauseError] (the channel archived, the owner
// gone) pauses the schedule at once. The outcome of each time is recorded
// in the schedule (Last, and Good for one that answered).
//
// The figures of an answer ([FiguresOf]) are its numbers that the number
// check found in its runs or queries, each named by a label no other of
// its numbers has; [Changes] compares them with the last good fire's, by
// label, so that a report says what moved with both values, computed
// rather than guessed by the model.
package schedule
