package bot

import "context"

// StopShared is stopShared, for the tests of replicas.
func (b *Bot) StopShared(ctx context.Context, channel, threadTS, questionTS, by string) (bool, error) {
	return b.stopShared(ctx, channel, threadTS, questionTS, by)
}
