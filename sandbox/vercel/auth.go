package vercel

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// credentials are what every API call carries: the bearer token, the team
// (query teamId) and the project (in the create body).
type credentials struct {
	token     string
	teamID    string
	projectID string
	oidc      bool      // token is a VERCEL_OIDC_TOKEN
	expires   time.Time // the OIDC token's exp; zero for access tokens
}

// LogValue keeps the token out of logs.
func (c credentials) LogValue() slog.Value {
	kind := "access token"
	if c.oidc {
		kind = "oidc token"
	}
	attrs := []slog.Attr{slog.String("kind", kind), slog.String("team", c.teamID), slog.String("project", c.projectID)}
	if !c.expires.IsZero() {
		attrs = append(attrs, slog.Time("expires", c.expires))
	}
	return slog.GroupValue(attrs...)
}

// resolveCredentials picks the credentials from cfg: an access token with
// its team and project when all three are set, else the OIDC token. The
// errors name the environment variables the fields come from.
func resolveCredentials(cfg Config, now time.Time) (credentials, error) {
	if cfg.Token != "" && cfg.TeamID != "" && cfg.ProjectID != "" {
		return credentials{token: cfg.Token, teamID: cfg.TeamID, projectID: cfg.ProjectID}, nil
	}
	if cfg.OIDCToken == "" {
		var missing []string
		for _, v := range []struct{ name, val string }{
			{"VERCEL_TOKEN", cfg.Token}, {"VERCEL_TEAM_ID", cfg.TeamID}, {"VERCEL_PROJECT_ID", cfg.ProjectID},
		} {
			if v.val == "" {
				missing = append(missing, v.name)
			}
		}
		if len(missing) < 3 {
			return credentials{}, fmt.Errorf("vercel: no credentials: %s not set (VERCEL_TOKEN needs VERCEL_TEAM_ID and VERCEL_PROJECT_ID; or set VERCEL_OIDC_TOKEN instead, e.g. with `vercel env pull`)",
				strings.Join(missing, " and "))
		}
		return credentials{}, errors.New("vercel: no credentials: set VERCEL_OIDC_TOKEN (run `vercel link` then `vercel env pull` to write it to .env.local), " +
			"or VERCEL_TOKEN with VERCEL_TEAM_ID and VERCEL_PROJECT_ID")
	}
	claims, err := parseOIDC(cfg.OIDCToken)
	if err != nil {
		return credentials{}, err
	}
	c := credentials{token: cfg.OIDCToken, teamID: claims.OwnerID, projectID: claims.ProjectID, oidc: true}
	if claims.Exp > 0 {
		c.expires = time.Unix(claims.Exp, 0)
	}
	if err := c.check(now); err != nil {
		return credentials{}, err
	}
	return c, nil
}

// check fails, saying what to do, when an OIDC token has expired.
func (c credentials) check(now time.Time) error {
	if c.oidc && !c.expires.IsZero() && !now.Before(c.expires) {
		return errors.New("vercel: " + expiredAdvice(c.expires))
	}
	return nil
}

func expiredAdvice(exp time.Time) string {
	return fmt.Sprintf("VERCEL_OIDC_TOKEN expired at %s; development tokens last 12 hours: run `vercel env pull` to refresh it and restart, "+
		"or use a long-lived VERCEL_TOKEN with VERCEL_TEAM_ID and VERCEL_PROJECT_ID", exp.UTC().Format(time.RFC3339))
}

// oidcClaims are the claims of a Vercel OIDC token that name the team and
// project.
type oidcClaims struct {
	OwnerID   string `json:"owner_id"`
	ProjectID string `json:"project_id"`
	Exp       int64  `json:"exp"`
}

// parseOIDC decodes a JWT's payload without verifying it: the API does
// that; the bot only needs to know where to send it and until when.
func parseOIDC(token string) (oidcClaims, error) {
	var c oidcClaims
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return c, errors.New("vercel: VERCEL_OIDC_TOKEN is not a JWT (want three dot-separated parts); copy it again, or run `vercel env pull`")
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return c, errors.New("vercel: VERCEL_OIDC_TOKEN: the payload is not base64url; copy it again, or run `vercel env pull`")
	}
	if err := json.Unmarshal(payload, &c); err != nil {
		return c, errors.New("vercel: VERCEL_OIDC_TOKEN: the payload is not JSON; copy it again, or run `vercel env pull`")
	}
	if c.OwnerID == "" || c.ProjectID == "" {
		return c, errors.New("vercel: VERCEL_OIDC_TOKEN has no owner_id or project_id claim; use a token from `vercel env pull` in a linked project, " +
			"or VERCEL_TOKEN with VERCEL_TEAM_ID and VERCEL_PROJECT_ID")
	}
	return c, nil
}
