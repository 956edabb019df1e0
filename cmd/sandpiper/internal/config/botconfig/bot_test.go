package botconfig

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sethvargo/go-envconfig"

	"github.com/sandpiper-bot/sandpiper/bot"
)

// TestBotLogQuotesControls: the bot's log lines name files and quote
// errors a program chose; the handler quotes them, so no escape
// sequence, C1 control or bidi override reaches an operator's terminal.
func TestBotLogQuotesControls(t *testing.T) {
	var b bytes.Buffer
	log := Bot{}.Logger(&b)
	hostile := "\x1b]52;c;cm0=\x07\x1b[2J\u009b\x9b\u202eexe.txt"
	log.Warn("file "+hostile, "file", hostile, "err", errors.New(hostile), hostile, []string{hostile})
	if i := strings.IndexFunc(b.String(), func(r rune) bool {
		return r < 0x20 && r != '\n' || r >= 0x7f && r <= 0x9f || r >= 0x202a && r <= 0x202e
	}); i >= 0 || !utf8.ValidString(b.String()) {
		t.Errorf("log line holds a control at %d: %q", i, &b)
	}
}

// TestNumberCheckSwitch: SANDPIPER_NUMBER_CHECK is on unless set off, in
// any of the words every switch takes, and anything else is refused,
// naming the variable.
func TestNumberCheckSwitch(t *testing.T) {
	for _, tc := range []struct {
		value   string
		set     bool
		off, ok bool
	}{
		{set: false, ok: true},
		{value: "on", set: true, ok: true},
		{value: " OFF ", set: true, off: true, ok: true},
		{value: "true", set: true, ok: true},
		{value: "no", set: true, off: true, ok: true},
		{value: "0", set: true, off: true, ok: true},
		{value: "maybe", set: true},
	} {
		env := map[string]string{}
		if tc.set {
			env["SANDPIPER_NUMBER_CHECK"] = tc.value
		}
		e, err := Load(t.Context(), envconfig.MapLookuper(env))
		if (err == nil) != tc.ok {
			t.Errorf("%q: err = %v, want ok %v", tc.value, err, tc.ok)
			continue
		}
		if err != nil {
			if !strings.Contains(err.Error(), "SANDPIPER_NUMBER_CHECK") {
				t.Errorf("%q: the error does not name the variable: %v", tc.value, err)
			}
			continue
		}
		if got := e.Config(nil).NumberCheckOff; got != tc.off {
			t.Errorf("%q: NumberCheckOff = %v, want %v", tc.value, got, tc.off)
		}
	}
}

// TestLoadBotRedis: the replicas' variables reach the bot's
// configuration; bad values name the variable.
func TestLoadBotRedis(t *testing.T) {
	for _, tt := range []struct {
		name    string
		env     map[string]string
		want    bot.Config
		wantErr string
	}{
		{name: "unset: no redis", env: nil, want: bot.Config{RedisClaimAfter: bot.DefaultRedisClaimAfter}},
		{
			name: "set",
			env:  map[string]string{"SANDPIPER_REDIS_URL": " redis://:pw@redis:6379/2 ", "SANDPIPER_REDIS_CLAIM_AFTER": "90s", "SANDPIPER_REPLICA": "bot-1"},
			want: bot.Config{RedisURL: "redis://:pw@redis:6379/2", RedisClaimAfter: 90 * time.Second, Replica: "bot-1"},
		},
		{name: "claim-after too short", env: map[string]string{"SANDPIPER_REDIS_CLAIM_AFTER": "100ms"}, wantErr: "SANDPIPER_REDIS_CLAIM_AFTER=100ms is out of range"},
		{name: "claim-after not a duration", env: map[string]string{"SANDPIPER_REDIS_CLAIM_AFTER": "soon"}, wantErr: "SANDPIPER_REDIS_CLAIM_AFTER=soon is not a duration: want a number with a unit (ms, s, m, h), e.g. SANDPIPER_REDIS_CLAIM_AFTER=1m"},
		{name: "replica name", env: map[string]string{"SANDPIPER_REPLICA": "bot one"}, wantErr: `SANDPIPER_REPLICA="bot one" is out of range`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, err := Load(t.Context(), envconfig.MapLookuper(tt.env))
			if err != nil || tt.wantErr != "" {
				if err == nil || tt.wantErr == "" || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("err = %v, want one with %q", err, tt.wantErr)
				}
				return
			}
			c := e.Config(nil)
			got := bot.Config{RedisURL: c.RedisURL, RedisClaimAfter: c.RedisClaimAfter, Replica: c.Replica}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestStreamSwitch: SANDPIPER_STREAM takes the words every switch takes,
// on and off among them.
func TestStreamSwitch(t *testing.T) {
	for value, stream := range map[string]bool{"on": true, "off": false, "true": true, "FALSE": false, "yes": true, "no": false, "1": true, "0": false} {
		e, err := Load(t.Context(), envconfig.MapLookuper(map[string]string{"SANDPIPER_STREAM": value}))
		if err != nil {
			t.Errorf("SANDPIPER_STREAM=%s: %v", value, err)
			continue
		}
		if got := !e.Config(nil).NoStream; got != stream {
			t.Errorf("SANDPIPER_STREAM=%s: streaming %v, want %v", value, got, stream)
		}
	}
}

// TestLoadReportsEverySetting: every bad setting is named at once, each
// with its value and what would do, and a bad log level among them.
func TestLoadReportsEverySetting(t *testing.T) {
	_, err := Load(t.Context(), envconfig.MapLookuper(map[string]string{
		"SANDPIPER_WORKERS": "x", "SANDPIPER_STREAM": "maybe", "SANDPIPER_LOG_LEVEL": "loud", "SANDPIPER_THREAD_TTL": "1s",
	}))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"config: 4 settings to fix:",
		"\n  SANDPIPER_WORKERS=x is not a whole number: want e.g. SANDPIPER_WORKERS=8",
		"\n  SANDPIPER_STREAM=maybe is not a switch: want on or off (or true/false, yes/no, 1/0), e.g. SANDPIPER_STREAM=on",
		"\n  SANDPIPER_LOG_LEVEL=loud is not a log level: want debug, info, warn or error, e.g. SANDPIPER_LOG_LEVEL=warn",
		"\n  SANDPIPER_THREAD_TTL=1s is out of range: want at least 1m",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
