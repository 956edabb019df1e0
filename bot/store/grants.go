package store

import (
	"maps"
	"time"
)

// Grant is an admin's leave for a channel's questions to query a data
// source (`sources allow NAME`): who gave it, and when.
type Grant struct {
	By string    `json:"by"`
	At time.Time `json:"at"`
}

// SetGrant returns the settings with the data source granted to the
// channel (allow) or not, by whom and when. Grants are channel settings,
// so they are kept where the others are: in channels.json, or in Redis
// for every replica at once.
func SetGrant(source string, allow bool, by string, now time.Time) func(*ChannelSettings) {
	return func(c *ChannelSettings) {
		m := maps.Clone(c.Sources) // the settings before the change may be kept
		if allow {
			if m == nil {
				m = map[string]Grant{}
			}
			m[source] = Grant{By: by, At: now.UTC()}
		} else {
			delete(m, source)
		}
		if len(m) == 0 {
			m = nil
		}
		c.Sources = m
	}
}

// Granted returns the sources of configured that are granted to the
// channel, in configured's order: a grant of a source the operator has
// since removed grants nothing.
func (c ChannelSettings) Granted(configured []string) []string {
	var out []string
	for _, name := range configured {
		if _, ok := c.Sources[name]; ok {
			out = append(out, name)
		}
	}
	return out
}

// GrantOf returns the channel's grant of source, if it has one.
func (c ChannelSettings) GrantOf(source string) (Grant, bool) {
	g, ok := c.Sources[source]
	return g, ok
}
