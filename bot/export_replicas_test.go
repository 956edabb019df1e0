package bot

import "context"

// StopShared is stopShared, for the tests of replicas.
func (b *Bot) StopShared(ctx context.Context, channel, threadTS, questionTS, by string) (bool, error) {
	return b.stopShared(ctx, channel, threadTS, questionTS, by)
}

// SetSharedQueueLimit bounds the shared queue of the bots made after it,
// until the test ends.
func SetSharedQueueLimit(t interface{ Cleanup(func()) }, n int) {
	old := sharedQueueLimit
	sharedQueueLimit = n
	t.Cleanup(func() { sharedQueueLimit = old })
}
