package agentconfig

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sethvargo/go-envconfig"

	"github.com/sandpiper-bot/sandpiper/agent/datasource"
	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/config"
	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// sourcePrefix starts the variables naming a source:
// SANDPIPER_SOURCE_<NAME>=URL, or SANDPIPER_SOURCE_<NAME>_FILE=PATH of a
// file holding the URL (a mounted Kubernetes Secret).
const sourcePrefix = "SANDPIPER_SOURCE_"

// Sources is the data sources' part of the environment (package
// datasource): the sources and the limits of their queries. It lives
// here, not in package config, so that sandpiper exec does not link the
// database drivers.
type Sources struct {
	// List are the sources configured, sorted by name; their URLs are
	// secrets.
	List []datasource.Config

	// File names a file of NAME=URL lines, one source a line.
	File string `env:"SANDPIPER_SOURCES_FILE"`
	// Privileged lists, comma-separated, the sources whose role may be
	// privileged (superuser, server files or programs).
	Privileged string `env:"SANDPIPER_SOURCES_PRIVILEGED"`
	// DMs lists, comma-separated, the sources questions in direct
	// messages with the bot may query (in channels, admins grant them
	// with `sources allow NAME`); DM holds them, checked.
	DMs       string `env:"SANDPIPER_SOURCES_DM"`
	DM        []string
	Timeout   time.Duration   `env:"SANDPIPER_QUERY_TIMEOUT"`
	MaxRows   int             `env:"SANDPIPER_QUERY_MAX_ROWS"`
	MaxSize   config.ByteSize `env:"SANDPIPER_QUERY_MAX_SIZE"`
	SchemaTTL time.Duration   `env:"SANDPIPER_SCHEMA_CACHE_TTL"`
}

// LoadSources reads the sources and their limits; its errors name the
// variable to fix. A source that cannot be reached is not an error here.
func LoadSources(ctx context.Context, lookup envconfig.Lookuper) (Sources, error) {
	var d datasource.Limits
	d = d.WithDefaults()
	c := Sources{Timeout: d.Timeout, MaxRows: d.Rows, SchemaTTL: datasource.DefaultSchemaTTL}
	if err := c.MaxSize.EnvDecode(fmt.Sprint(d.Bytes)); err != nil {
		return c, err
	}
	if err := config.Join(config.Process(ctx, lookup, &c),
		config.CheckRange("SANDPIPER_QUERY_TIMEOUT", c.Timeout, "at least 1s", c.Timeout < time.Second),
		config.CheckRange("SANDPIPER_QUERY_MAX_ROWS", c.MaxRows, "at least 1", c.MaxRows < 1),
		config.CheckRange("SANDPIPER_QUERY_MAX_SIZE", c.MaxSize, "at least 1KiB", c.MaxSize.Bytes() < 1<<10),
		config.CheckRange("SANDPIPER_SCHEMA_CACHE_TTL", c.SchemaTTL, "at least 1s", c.SchemaTTL < time.Second),
	); err != nil {
		return c, err
	}
	urls := map[string]string{}
	from := map[string]string{} // where each source was set
	add := func(name, url, where string) error {
		name = strings.ToLower(name)
		if !datasource.ValidName(name) {
			return fmt.Errorf("config: %s: %q is not a source name: use letters, digits and _, starting with a letter", where, name)
		}
		if prev, dup := from[name]; dup {
			return fmt.Errorf("config: source %s is set twice, in %s and in %s", name, prev, where)
		}
		urls[name], from[name] = strings.TrimSpace(url), where
		return nil
	}
	for _, k := range config.VarNames(lookup, sourcePrefix) {
		v, _ := lookup.Lookup(k)
		if strings.TrimSpace(v) == "" {
			continue // set empty: no source
		}
		name := strings.TrimPrefix(k, sourcePrefix)
		if base, ok := strings.CutSuffix(name, "_FILE"); ok {
			data, err := os.ReadFile(strings.TrimSpace(v))
			if err != nil {
				return c, fmt.Errorf("config: %s: %v", k, err)
			}
			if err := add(base, string(data), k); err != nil {
				return c, err
			}
			continue
		}
		if err := add(name, v, k); err != nil {
			return c, err
		}
	}
	if c.File != "" {
		vars, err := config.ReadDotenvFile(c.File)
		if err != nil {
			return c, fmt.Errorf("config: SANDPIPER_SOURCES_FILE=%s: %v", c.File, err)
		}
		for k, v := range vars {
			if err := add(k, v, "SANDPIPER_SOURCES_FILE"); err != nil {
				return c, err
			}
		}
	}
	privileged, err := sourceList("SANDPIPER_SOURCES_PRIVILEGED", c.Privileged, urls)
	if err != nil {
		return c, err
	}
	if c.DM, err = sourceList("SANDPIPER_SOURCES_DM", c.DMs, urls); err != nil {
		return c, err
	}
	for name, url := range urls {
		c.List = append(c.List, datasource.Config{Name: name, URL: url, Privileged: slices.Contains(privileged, name)})
	}
	slices.SortFunc(c.List, func(a, b datasource.Config) int { return strings.Compare(a.Name, b.Name) })
	return c, nil
}

// sourceList reads the comma-separated source names of the variable
// name; each must be a configured source (a key of urls).
func sourceList(name, value string, urls map[string]string) ([]string, error) {
	var out []string
	for _, n := range strings.Split(value, ",") {
		if n = strings.ToLower(strings.TrimSpace(n)); n == "" {
			continue
		}
		if _, ok := urls[n]; !ok {
			known := slices.Sorted(maps.Keys(urls))
			if len(known) == 0 {
				return nil, fmt.Errorf("config: %s names %s, which is not a configured source: none is configured (set SANDPIPER_SOURCE_%s=URL)", name, n, strings.ToUpper(n))
			}
			return nil, fmt.Errorf("config: %s names %s, which is not a configured source; the sources are: %s", name, n, strings.Join(known, ", "))
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// Names are the configured sources' names.
func (c Sources) Names() []string {
	var names []string
	for _, s := range c.List {
		names = append(names, s.Name)
	}
	return names
}

// Limits are a query's limits: a result is also kept within the size of
// one file the sandbox takes.
func (c Sources) Limits(files sandbox.FileLimits) datasource.Limits {
	size := c.MaxSize.Bytes()
	if f := files.WithDefaults().FileSize; f > 0 && f < size {
		size = f
	}
	return datasource.Limits{Timeout: c.Timeout, Rows: c.MaxRows, Bytes: size}
}

// Open opens the sources (nil when none is configured); reg, when set,
// gets their metrics.
func (c Sources) Open(files sandbox.FileLimits, log *slog.Logger, reg prometheus.Registerer) (*datasource.Set, error) {
	if len(c.List) == 0 {
		return nil, nil
	}
	return datasource.Open(c.List, datasource.Options{Limits: c.Limits(files), SchemaTTL: c.SchemaTTL, Logger: log, Registerer: reg})
}
