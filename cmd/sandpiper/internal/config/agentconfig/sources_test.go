package agentconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/sandpiper-bot/sandpiper/agent/datasource"
	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// names is a Lookuper that lists its names, as config.Lookup's does.
type names map[string]string

func (n names) Lookup(k string) (string, bool) { v, ok := n[k]; return v, ok }
func (n names) Names() []string {
	var out []string
	for k := range n {
		out = append(out, k)
	}
	return out
}

var _ envconfig.Lookuper = names(nil)

func TestLoadSources(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	os.WriteFile(secret, []byte("postgres://u:pw@db:5432/dw\n"), 0o600)
	list := filepath.Join(dir, "sources.env")
	os.WriteFile(list, []byte("# sources\nCRM=mysql://u:p@crm/crm\nlocal='sqlite:/data/x.db'\n"), 0o600)
	for _, tc := range []struct {
		name    string
		env     names
		want    string // name=url,privileged;…
		wantErr string
		check   func(t *testing.T, c Sources)
	}{
		{name: "none", env: names{}, want: ""},
		{name: "one of each kind", env: names{
			"SANDPIPER_SOURCE_SALES":          "postgres://u:p@h/sales",
			"SANDPIPER_SOURCE_DW_FILE":        secret,
			"SANDPIPER_SOURCES_FILE":          list,
			"SANDPIPER_SOURCES_PRIVILEGED":    "dw",
			"SANDPIPER_SOURCE_OFF":            "",
			"SANDPIPER_SOURCE_2ND_NOT_A_NAME": "",
		}, want: "crm=mysql://u:p@crm/crm,false;dw=postgres://u:pw@db:5432/dw,true;local=sqlite:/data/x.db,false;sales=postgres://u:p@h/sales,false"},
		{name: "limits", env: names{"SANDPIPER_QUERY_TIMEOUT": "5s", "SANDPIPER_QUERY_MAX_ROWS": "10", "SANDPIPER_QUERY_MAX_SIZE": "1MiB", "SANDPIPER_SCHEMA_CACHE_TTL": "1m"},
			check: func(t *testing.T, c Sources) {
				if l := c.Limits(sandbox.FileLimits{}); l != (datasource.Limits{Timeout: 5 * time.Second, Rows: 10, Bytes: 1 << 20}) || c.SchemaTTL != time.Minute {
					t.Errorf("limits %+v, ttl %s", l, c.SchemaTTL)
				}
			}},
		{name: "defaults, within a file's size", env: names{}, check: func(t *testing.T, c Sources) {
			if l := c.Limits(sandbox.FileLimits{}); l != (datasource.Limits{Timeout: 30 * time.Second, Rows: 100_000, Bytes: 25 << 20}) {
				t.Errorf("limits %+v", l)
			}
		}},
		{name: "twice", env: names{"SANDPIPER_SOURCE_DW": "sqlite:a.db", "SANDPIPER_SOURCE_DW_FILE": secret},
			wantErr: "config: source dw is set twice, in SANDPIPER_SOURCE_DW and in SANDPIPER_SOURCE_DW_FILE"},
		{name: "bad name", env: names{"SANDPIPER_SOURCE_2ND": "sqlite:a.db"},
			wantErr: `config: SANDPIPER_SOURCE_2ND: "2nd" is not a source name`},
		{name: "missing file", env: names{"SANDPIPER_SOURCE_DW_FILE": filepath.Join(dir, "nope")},
			wantErr: "config: SANDPIPER_SOURCE_DW_FILE: open "},
		{name: "privileged unknown", env: names{"SANDPIPER_SOURCES_PRIVILEGED": "dw"},
			wantErr: "SANDPIPER_SOURCES_PRIVILEGED names dw, which is not a configured source"},
		{name: "privileged unknown among others", env: names{"SANDPIPER_SOURCE_SALES": "sqlite:a.db", "SANDPIPER_SOURCES_PRIVILEGED": "dw"},
			wantErr: "SANDPIPER_SOURCES_PRIVILEGED names dw, which is not a configured source; the sources are: sales"},
		{name: "direct messages", env: names{"SANDPIPER_SOURCE_SALES": "sqlite:a.db", "SANDPIPER_SOURCE_DW": "sqlite:b.db", "SANDPIPER_SOURCES_DM": " Sales, sales,"},
			check: func(t *testing.T, c Sources) {
				if strings.Join(c.DM, ",") != "sales" {
					t.Errorf("direct messages may query %q, want sales", c.DM)
				}
			}},
		{name: "direct messages by default", env: names{"SANDPIPER_SOURCE_SALES": "sqlite:a.db"},
			check: func(t *testing.T, c Sources) {
				if len(c.DM) != 0 {
					t.Errorf("direct messages may query %q by default, want none", c.DM)
				}
			}},
		{name: "direct messages unknown", env: names{"SANDPIPER_SOURCE_SALES": "sqlite:a.db", "SANDPIPER_SOURCE_DW": "sqlite:b.db", "SANDPIPER_SOURCES_DM": "sales,crm"},
			wantErr: "config: SANDPIPER_SOURCES_DM names crm, which is not a configured source; the sources are: dw, sales"},
		{name: "direct messages, no source", env: names{"SANDPIPER_SOURCES_DM": "sales"},
			wantErr: "config: SANDPIPER_SOURCES_DM names sales, which is not a configured source: none is configured (set SANDPIPER_SOURCE_SALES=URL)"},
		{name: "timeout", env: names{"SANDPIPER_QUERY_TIMEOUT": "0s"}, wantErr: "SANDPIPER_QUERY_TIMEOUT=0s is out of range"},
		{name: "rows", env: names{"SANDPIPER_QUERY_MAX_ROWS": "0"}, wantErr: "SANDPIPER_QUERY_MAX_ROWS=0 is out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := LoadSources(t.Context(), tc.env)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "pw@") {
					t.Errorf("the error shows a URL: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.check != nil {
				tc.check(t, c)
				return
			}
			var got []string
			for _, s := range c.List {
				got = append(got, s.Name+"="+s.URL+","+map[bool]string{true: "true", false: "false"}[s.Privileged])
			}
			if g := strings.Join(got, ";"); g != tc.want {
				t.Errorf("sources %s\nwant %s", g, tc.want)
			}
		})
	}
}
