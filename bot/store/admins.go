package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/patrickmn/go-cache"
	"github.com/slack-go/slack"
)

// defaultAdminTTL is how long a users.info answer is kept.
const defaultAdminTTL = 10 * time.Minute

// Admins decides who may change a channel's settings: the configured user
// IDs, and the workspace's admins and owners (users.info, cached).
type Admins struct {
	ids   []string
	api   *slack.Client
	cache *cache.Cache
}

// NewAdmins trusts the user IDs ids, and asks api about anyone else.
func NewAdmins(ids []string, api *slack.Client) *Admins {
	return &Admins{ids: ids, api: api, cache: cache.New(defaultAdminTTL, defaultAdminTTL)}
}

// IsAdmin reports whether user may change settings and stop anyone's
// answer.
func (a *Admins) IsAdmin(ctx context.Context, user string) (bool, error) {
	if slices.Contains(a.ids, user) {
		return true, nil
	}
	if v, ok := a.cache.Get(user); ok {
		return v.(bool), nil
	}
	u, err := a.api.GetUserInfoContext(ctx, user, slack.GetUserInfoOptionIncludeLocale(false))
	if err != nil {
		return false, fmt.Errorf("users.info %s: %w", user, err)
	}
	ok := (u.IsAdmin || u.IsOwner || u.IsPrimaryOwner) && !u.Deleted && !u.IsBot
	a.cache.SetDefault(user, ok)
	return ok, nil
}
