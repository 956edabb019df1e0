package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/sandpiper-bot/sandpiper/bot"
	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/cli"
	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/config"
)

const healthcheckUsage = `usage: sandpiper healthcheck [URL]

Exits 0 when the bot's /healthz answers 200 OK, 1 otherwise: a container
HEALTHCHECK that needs no curl. The default URL is /healthz on
SANDPIPER_HTTP_ADDR (default ` + bot.DefaultHTTPAddr + `), at 127.0.0.1 when it
names all interfaces. Give .../readyz as URL for readiness: it fails, with
the reason, while the bot is not connected to Slack or cannot reach Redis.
`

// runHealthcheck is `sandpiper healthcheck`.
func runHealthcheck(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 1 || len(args) == 1 && strings.HasPrefix(args[0], "-") {
		return cli.UsageError(fmt.Errorf("healthcheck: unexpected %q", args[0]), healthcheckUsage)
	}
	url := ""
	if len(args) == 1 {
		url = args[0]
	} else {
		lookup, err := cli.LoadEnv()
		if err != nil {
			return err
		}
		if _, err := config.LogLevel(lookup, slog.LevelInfo); err != nil { // every command checks it
			return cli.ConfigError(err)
		}
		addr := bot.DefaultHTTPAddr
		if v, ok := lookup.Lookup("SANDPIPER_HTTP_ADDR"); ok {
			addr = strings.TrimSpace(v)
		}
		if addr == "" || addr == "-" {
			return errors.New("healthcheck: SANDPIPER_HTTP_ADDR is empty, so the bot serves no /healthz")
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return cli.ConfigError(fmt.Errorf("healthcheck: SANDPIPER_HTTP_ADDR=%q: %w", addr, err))
		}
		if host == "" || host == "0.0.0.0" || host == "::" {
			host = "127.0.0.1"
		}
		url = "http://" + net.JoinHostPort(host, port) + "/healthz"
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return cli.ConfigError(fmt.Errorf("healthcheck: %w", err))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: %s: %s %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	fmt.Fprintf(stdout, "ok %s\n", url)
	return nil
}
