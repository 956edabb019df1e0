// Package slackapi is how the bot's packages call Slack's Web API: the
// client with its timeouts and retries, the bounds of a call, and Slack's
// errors explained for people.
package slackapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/slack-go/slack"
)

// Bounds of the calls to Slack.
const (
	// CallTimeout bounds one Web API call.
	CallTimeout = 20 * time.Second
	// FileTransferTimeout bounds one file download or upload.
	FileTransferTimeout = 3 * time.Minute
	// Retries is how many times a call is tried again after a 429.
	Retries = 3
)

// New returns a Web API client for the bot token (and the app-level
// token, for Socket Mode) at apiURL, with timeout per request and
// [Retries] after 429s.
func New(botToken, appToken, apiURL string, timeout time.Duration) *slack.Client {
	return slack.New(botToken,
		slack.OptionAppLevelToken(appToken),
		slack.OptionAPIURL(apiURL),
		slack.OptionHTTPClient(&http.Client{Timeout: timeout}),
		slack.OptionRetryConfig(slack.RetryConfig{
			MaxRetries:         Retries,
			RetryAfterDuration: 5 * time.Second,
			RetryAfterJitter:   200 * time.Millisecond,
		}),
	)
}

// Explain turns a Slack error into text that names the Slack error code
// and any detail Slack gave; other errors are returned as they are.
func Explain(err error) error {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		var details []string
		details = append(details, se.ResponseMetadata.Messages...)
		if se.Needed != "" {
			details = append(details, "needed scope "+se.Needed)
		}
		if len(details) > 0 {
			return fmt.Errorf("%s (%s)", se.Err, strings.Join(details, "; "))
		}
	}
	return err
}

// Refused reports whether err is Slack refusing a call (an error
// response), as opposed to Slack not answering.
func Refused(err error) bool {
	_, ok := errors.AsType[slack.SlackErrorResponse](err)
	return ok
}

// Context returns a context for Slack calls made for an answer: it
// outlives the answer's deadline (a card must show that its run ended)
// but not a stuck Slack.
func Context(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), CallTimeout)
}

// RequiredScopes are the bot token scopes sandpiper uses; manifest.yaml
// asks for them.
var RequiredScopes = []string{
	"app_mentions:read", "channels:history", "groups:history", "im:history", "mpim:history",
	"chat:write", "reactions:write", "users:read", "files:read", "files:write", "commands",
}

// AgentViewScope is the scope of Slack's agent (assistant) view methods:
// suggested prompts and thread titles. Without it the bot works as in
// any DM, without them.
const AgentViewScope = "assistant:write"

// OptionalScopes are the bot token scopes sandpiper uses when granted,
// with what is lost without them; manifest.yaml asks for them too.
var OptionalScopes = map[string]string{
	AgentViewScope:  "the agent view's suggested prompts and thread titles are off",
	"channels:read": "a scheduled report in an archived public channel is paused only when Slack refuses its post",
	"groups:read":   "a scheduled report in an archived private channel is paused only when Slack refuses its post",
}
