package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/sandpiper-bot/sandpiper/bot"
	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// fileEnv is the file limits' part of the environment; the defaults are
// bot's (bot.DefaultMaxFileSize …).
type fileEnv struct {
	FileSize   byteSize `env:"SANDPIPER_FILE_MAX_SIZE, default=25MiB"`
	RunSize    byteSize `env:"SANDPIPER_FILES_MAX_TOTAL, default=50MiB"`
	RunFiles   int      `env:"SANDPIPER_FILES_MAX_COUNT, default=20"`
	ThreadSize byteSize `env:"SANDPIPER_WORKSPACE_MAX_SIZE, default=200MiB"`
	Uploads    int      `env:"SANDPIPER_UPLOADS_MAX, default=10"`
}

func loadFileEnv(ctx context.Context, lookup envconfig.Lookuper) (sandbox.FileLimits, error) {
	var e fileEnv
	if err := envconfig.ProcessWith(ctx, &envconfig.Config{Target: &e, Lookuper: lookup}); err != nil {
		return sandbox.FileLimits{}, fmt.Errorf("config: %s", envNames(err.Error(), e))
	}
	size := func(n byteSize) string { return formatSize(int64(n)) }
	if err := checkRanges(
		rangeCheck{"SANDPIPER_FILE_MAX_SIZE", size(e.FileSize), "at least 1KiB", e.FileSize < 1<<10},
		rangeCheck{"SANDPIPER_FILES_MAX_TOTAL", size(e.RunSize), "at least SANDPIPER_FILE_MAX_SIZE (" + size(e.FileSize) + ")", e.RunSize < e.FileSize},
		rangeCheck{"SANDPIPER_FILES_MAX_COUNT", strconv.Itoa(e.RunFiles), "1 to 64", e.RunFiles < 1 || e.RunFiles > 64},
		rangeCheck{"SANDPIPER_WORKSPACE_MAX_SIZE", size(e.ThreadSize), "at least SANDPIPER_FILES_MAX_TOTAL (" + size(e.RunSize) + ")", e.ThreadSize < e.RunSize},
		rangeCheck{"SANDPIPER_UPLOADS_MAX", strconv.Itoa(e.Uploads), "at least 1", e.Uploads < 1},
	); err != nil {
		return sandbox.FileLimits{}, err
	}
	return sandbox.FileLimits{
		FileSize: int64(e.FileSize), RunSize: int64(e.RunSize), RunFiles: e.RunFiles,
		ThreadSize: int64(e.ThreadSize), Uploads: e.Uploads,
	}, nil
}

const healthcheckUsage = `usage: sandpiper healthcheck [URL]

Exits 0 when the bot's /healthz answers 200 OK, 1 otherwise: a container
HEALTHCHECK that needs no curl. The default URL is /healthz on
SANDPIPER_HTTP_ADDR (default 127.0.0.1:8080), at 127.0.0.1 when it
names all interfaces.
`

// runHealthcheck is `sandpiper healthcheck`.
func runHealthcheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 1 || len(args) == 1 && strings.HasPrefix(args[0], "-") {
		fmt.Fprint(stderr, healthcheckUsage)
		if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
			return 0
		}
		return 2
	}
	url := ""
	if len(args) == 1 {
		url = args[0]
	} else {
		lookup, _, err := envLookuper(".")
		if err != nil {
			fmt.Fprintf(stderr, "sandpiper: %v\n", err)
			return 2
		}
		addr := bot.DefaultHTTPAddr
		if v, ok := lookup.Lookup("SANDPIPER_HTTP_ADDR"); ok {
			addr = strings.TrimSpace(v)
		}
		if addr == "" || addr == "-" {
			fmt.Fprintln(stderr, "sandpiper: healthcheck: SANDPIPER_HTTP_ADDR is empty, so the bot serves no /healthz")
			return 1
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			fmt.Fprintf(stderr, "sandpiper: healthcheck: SANDPIPER_HTTP_ADDR=%q: %v\n", addr, err)
			return 2
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
		fmt.Fprintf(stderr, "sandpiper: healthcheck: %v\n", err)
		return 2
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "sandpiper: healthcheck: %v\n", err)
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "sandpiper: healthcheck: %s: %s %s\n", url, resp.Status, strings.TrimSpace(string(body)))
		return 1
	}
	fmt.Fprintf(stdout, "ok %s\n", url)
	return 0
}
