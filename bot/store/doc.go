// Package store keeps what the bot's admins and users set and say: the
// per-channel settings ([FileSettings] in the data directory, or
// [RedisSettings] shared by replicas), the clicks on answers' feedback
// buttons ([FeedbackFile], or [RedisFeedback]), and who counts as an
// admin ([Admins]: the configured user IDs and the workspace's admins
// and owners, asked of Slack and cached).
package store
