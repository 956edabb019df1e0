package replica_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/bot/internal/replica"
	"github.com/sandpiper-bot/sandpiper/bot/internal/replica/redistest"
)

func TestParseURL(t *testing.T) {
	for _, test := range []struct {
		url      string
		addr     string
		db       int
		user     string
		password string
		tls      bool
		err      string // in the error; "" for none
	}{
		{url: "redis://localhost:6379/0", addr: "localhost:6379"},
		{url: "redis://redis", addr: "redis:6379"},
		{url: "redis://10.0.0.5:6380/3", addr: "10.0.0.5:6380", db: 3},
		{url: "redis://:s3cret@redis:6379/1", addr: "redis:6379", db: 1, password: "s3cret"},
		{url: "redis://bot:s3cret@redis:6379", addr: "redis:6379", user: "bot", password: "s3cret"},
		{url: "rediss://bot:s3cret@cache.example.com:6380/0", addr: "cache.example.com:6380", user: "bot", password: "s3cret", tls: true},
		{url: "  redis://redis:6379/2\n", addr: "redis:6379", db: 2},
		{url: "redis://redis:6379/0?dial_timeout=1s", addr: "redis:6379"},

		{url: "", err: "not set"},
		{url: "http://redis:6379", err: `scheme "http"`},
		{url: "redis:6379", err: "no host"},
		{url: "redis:///0", err: "no host"},
		{url: "redis://redis:port/0", err: "invalid port"},
		{url: "redis://redis:99999/0", err: "not a port"},
		{url: "redis://redis:6379/zero", err: "database number"},
		{url: "redis://redis:6379/-1", err: "database number"},
		{url: "redis://redis:6379/0/1", err: "database number"},
		{url: "redis://redis:6379/0?bogus=1", err: "bogus"},
		{url: "redis://:pa%zzword@redis:6379/0", err: "percent-encoded"},
		{url: "redis://u:pass word@redis:6379/0", err: "not a URL"},
		{url: "redis://u:pass@redis:port/0", err: "invalid port"},
		{url: "redis://:s3cret@redis:6379/x", err: "redis://:xxxxx@redis:6379/x"},
	} {
		t.Run(test.url, func(t *testing.T) {
			opts, err := replica.ParseURL(test.url)
			if test.err != "" {
				if err == nil {
					t.Fatalf("no error; want one with %q", test.err)
				}
				msg := err.Error()
				if !strings.Contains(msg, test.err) {
					t.Errorf("error %q does not say %q", msg, test.err)
				}
				if !strings.HasPrefix(msg, replica.EnvURL) {
					t.Errorf("error %q does not name %s", msg, replica.EnvURL)
				}
				for _, secret := range []string{"s3cret", "pass word", "pa%zzword", "zzword"} {
					if strings.Contains(msg, secret) {
						t.Errorf("error %q shows the password", msg)
					}
				}
				var ue *replica.URLError
				if !errors.As(err, &ue) {
					t.Errorf("error is a %T, not a *URLError", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if opts.Addr != test.addr || opts.DB != test.db || opts.Username != test.user || opts.Password != test.password || (opts.TLSConfig != nil) != test.tls {
				t.Errorf("got addr %s db %d user %q password %q tls %v", opts.Addr, opts.DB, opts.Username, opts.Password, opts.TLSConfig != nil)
			}
		})
	}
}

func TestOpenFails(t *testing.T) {
	srv := newServer(t)
	ctx := context.Background()
	if _, err := srv.Do(ctx, "CONFIG", "SET", "requirepass", "right-pw"); err != nil {
		t.Fatal(err)
	}
	for _, test := range []struct {
		name, url, err string
	}{
		{"unreachable", "redis://127.0.0.1:1/0", "cannot reach Redis"},
		{"wrong password", "redis://:wrong-pw@" + srv.Addr() + "/0", "WRONGPASS"},
		{"no password", "redis://" + srv.Addr() + "/0", "NOAUTH"},
		{"bad URL", "redis://" + srv.Addr() + "/x", "database number"},
	} {
		t.Run(test.name, func(t *testing.T) {
			_, err := replica.Open(ctx, replica.Config{URL: test.url, Logger: testLogger(t)})
			if err == nil {
				t.Fatal("Open succeeded")
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, replica.EnvURL) || !strings.Contains(msg, test.err) {
				t.Errorf("error %q: want it to name %s and say %q", msg, replica.EnvURL, test.err)
			}
			if strings.Contains(msg, "wrong-pw") || strings.Contains(msg, "right-pw") {
				t.Errorf("error %q shows a password", msg)
			}
		})
	}
	t.Run("right password", func(t *testing.T) {
		s := open(t, "redis://:right-pw@"+srv.Addr()+"/0", replica.Config{})
		if err := s.Ready(); err != nil {
			t.Error(err)
		}
	})
}

// rediss:// connects over TLS, and checks the server's certificate.
func TestOpenTLS(t *testing.T) {
	srv := redistest.StartWith(t, redistest.Options{TLS: true})
	_, err := replica.Open(context.Background(), replica.Config{URL: srv.URL(0), Logger: testLogger(t)})
	if err == nil || !strings.HasPrefix(err.Error(), replica.EnvURL) || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("self-signed certificate: %v; want a certificate error naming %s", err, replica.EnvURL)
	}
	s := open(t, srv.URL(0)+"?skip_verify=true", replica.Config{})
	enqueue(t, s, question("C1/1.0", 0))
	j := newJournal()
	serve(t, s, j.handler("a", 0))
	eventually(t, "answered over TLS", func() bool { return j.finished("C1/1.0#0") })
}

func TestOpenBadConfig(t *testing.T) {
	for _, cfg := range []replica.Config{
		{Replica: "has space"},
		{Replica: "ok", ClaimAfter: time.Millisecond},
	} {
		cfg.URL = "redis://127.0.0.1:1/0"
		if _, err := replica.Open(context.Background(), cfg); err == nil || strings.Contains(err.Error(), "cannot reach") {
			t.Errorf("Open(%+v) = %v; want a configuration error", cfg, err)
		}
	}
}

func TestCheck(t *testing.T) {
	srv := newServer(t)
	s := open(t, srv.URL(2), replica.Config{})
	info, err := s.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.Version == "" || info.Addr != srv.Addr() || info.DB != 2 {
		t.Errorf("Check = %+v", info)
	}
	// The test server keeps nothing on disk: doctor should say so.
	if len(info.Warnings) == 0 || !strings.Contains(strings.Join(info.Warnings, "\n"), "appendonly") {
		t.Errorf("no warning about persistence: %q", info.Warnings)
	}
	if _, err := srv.Do(context.Background(), "CONFIG", "SET", "maxmemory-policy", "allkeys-lru"); err != nil {
		t.Fatal(err)
	}
	info, _ = s.Check(context.Background())
	if !strings.Contains(strings.Join(info.Warnings, "\n"), "noeviction") {
		t.Errorf("no warning about eviction: %q", info.Warnings)
	}
}

func TestDedupeAcrossReplicas(t *testing.T) {
	srv := newServer(t)
	ctx := context.Background()
	a := open(t, srv.URL(0), replica.Config{DedupeTTL: time.Hour})
	b := open(t, srv.URL(0), replica.Config{})

	for _, test := range []struct {
		name  string
		first func() (bool, error)
		again func() (bool, error)
	}{
		{"event", func() (bool, error) { return a.SeenEvent(ctx, "Ev1") }, func() (bool, error) { return b.SeenEvent(ctx, "Ev1") }},
		{"message", func() (bool, error) { return b.SeenMessage(ctx, "C1", "1.000001") }, func() (bool, error) { return a.SeenMessage(ctx, "C1", "1.000001") }},
	} {
		t.Run(test.name, func(t *testing.T) {
			if dup, err := test.first(); err != nil || dup {
				t.Fatalf("first = %v, %v; want new", dup, err)
			}
			for range 2 {
				if dup, err := test.again(); err != nil || !dup {
					t.Fatalf("again = %v, %v; want duplicate", dup, err)
				}
			}
		})
	}
	// The keys expire.
	ttl, err := srv.Do(ctx, "TTL", "sandpiper:seen:event:Ev1")
	if err != nil || ttl == ":-1" || ttl == ":-2" {
		t.Errorf("TTL of a dedupe key = %s, %v; want it to expire", ttl, err)
	}

	// Enqueue deduplicates by event id and by message, across replicas:
	// a retry delivered to another replica, and a mention's second event.
	q := replica.Question{ID: "C1/2.000001", Thread: "C1/2.000001", EventID: "Ev2", Channel: "C1", TS: "2.000001"}
	if _, err := a.Enqueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Enqueue(ctx, q); !errors.Is(err, replica.ErrDuplicate) {
		t.Errorf("retry on another replica: %v; want ErrDuplicate", err)
	}
	q.EventID = "Ev3" // the message event of the same mention
	if _, err := b.Enqueue(ctx, q); !errors.Is(err, replica.ErrDuplicate) {
		t.Errorf("same message, new event id: %v; want ErrDuplicate", err)
	}
	if st := stats(t, a); st.Queued != 1 {
		t.Errorf("queued %d; want 1", st.Queued)
	}
	if got := stats(t, a).Duplicates + stats(t, b).Duplicates; got != 6 {
		t.Errorf("duplicates counted %d; want 6", got)
	}
}

func TestQueueFull(t *testing.T) {
	srv := newServer(t)
	ctx := context.Background()
	s := open(t, srv.URL(0), replica.Config{MaxQueued: 2})
	enqueue(t, s, question("C1/1.0", 1), question("C1/1.0", 2))
	q := question("C1/1.0", 3)
	if _, err := s.Enqueue(ctx, q); !errors.Is(err, replica.ErrQueueFull) {
		t.Fatalf("third question: %v; want ErrQueueFull", err)
	}
	// A refused question is not remembered as seen: once there is room it
	// can be queued.
	j := newJournal()
	serve(t, s, j.handler("a", 0))
	eventually(t, "the queue drains", func() bool { return j.finished("C1/1.0#1", "C1/1.0#2") })
	if _, err := s.Enqueue(ctx, q); err != nil {
		t.Fatalf("after the queue drained: %v", err)
	}
}

func TestEnqueueServeDone(t *testing.T) {
	srv := newServer(t)
	s := open(t, srv.URL(0), replica.Config{Workers: 4})
	var qs []replica.Question
	for i := range 10 {
		qs = append(qs, question("C1/"+string(rune('a'+i%3)), i))
	}
	enqueue(t, s, qs...)
	if st := stats(t, s); st.Queued != 10 || st.Pending != 0 {
		t.Errorf("before serving: %+v", st)
	}
	j := newJournal()
	var payloads = map[string]string{}
	h := j.handler("a", 0)
	serve(t, s, func(ctx context.Context, d *replica.Delivery) error {
		j.mu.Lock()
		payloads[d.ID] = string(d.Payload)
		j.mu.Unlock()
		if d.Attempt != 1 || d.Reclaimed || d.PreviousReplica != "" {
			t.Errorf("%s: first delivery with attempt %d, reclaimed %v, previous %q", d.ID, d.Attempt, d.Reclaimed, d.PreviousReplica)
		}
		return h(ctx, d)
	})
	var ids []string
	for _, q := range qs {
		ids = append(ids, q.ID)
	}
	eventually(t, "all answered", func() bool { return j.finished(ids...) })
	eventually(t, "the queue empties", func() bool {
		st := stats(t, s)
		return st.Queued == 0 && st.Pending == 0
	})
	for _, q := range qs {
		if j.count[q.ID] != 1 {
			t.Errorf("%s handled %d times", q.ID, j.count[q.ID])
		}
		if payloads[q.ID] != string(q.Payload) {
			t.Errorf("%s: payload %q, want %q", q.ID, payloads[q.ID], q.Payload)
		}
	}
	if st, _, _ := s.AnswerState(context.Background(), qs[0].ID); st != replica.Done {
		t.Errorf("state after answering: %q", st)
	}
}

func TestSettingsShared(t *testing.T) {
	srv := newServer(t)
	ctx := context.Background()
	a := open(t, srv.URL(0), replica.Config{})
	b := open(t, srv.URL(0), replica.Config{})

	if v, err := b.Settings(ctx, "C1"); err != nil || v != nil {
		t.Fatalf("unset: %q, %v", v, err)
	}
	for _, val := range []string{`{"debug":true}`, `{"debug":false}`} {
		if err := a.SetSettings(ctx, "C1", []byte(val)); err != nil {
			t.Fatal(err)
		}
		// No wait: the other replica reads what was just written.
		if v, err := b.Settings(ctx, "C1"); err != nil || string(v) != val {
			t.Errorf("through b after a set %s: %q, %v", val, v, err)
		}
	}
	n, err := b.ImportSettings(ctx, map[string][]byte{"C1": []byte(`{"debug":true}`), "C2": []byte(`{"debug":true}`)})
	if err != nil || n != 1 {
		t.Errorf("ImportSettings = %d, %v; want 1 (C2 only)", n, err)
	}
	all, err := a.AllSettings(ctx)
	if err != nil || string(all["C1"]) != `{"debug":false}` || string(all["C2"]) != `{"debug":true}` {
		t.Errorf("AllSettings = %q, %v", all, err)
	}
}

func TestFeedback(t *testing.T) {
	srv := newServer(t)
	ctx := context.Background()
	a := open(t, srv.URL(0), replica.Config{})
	b := open(t, srv.URL(0), replica.Config{})
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	recs := []replica.Feedback{
		{Channel: "C1", ThreadTS: "1.0", User: "U1", Rating: "good", Model: "m", Time: at},
		{Channel: "C1", ThreadTS: "2.0", MessageTS: "2.5", User: "U2", Rating: "bad", Model: "m", Time: at},
		{Channel: "C1", ThreadTS: "3.0", User: "U1", Rating: "good", Model: "m", Time: at},
		{Channel: "C2", ThreadTS: "4.0", User: "U3", Rating: "good", Model: "m", Time: at},
	}
	for i, f := range recs {
		s := a
		if i%2 == 1 {
			s = b
		}
		if err := s.AddFeedback(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.AddFeedback(ctx, replica.Feedback{Channel: "C1"}); err == nil {
		t.Error("feedback without a rating accepted")
	}
	tally, err := b.FeedbackTally(ctx, "C1")
	if err != nil || tally["good"] != 2 || tally["bad"] != 1 || len(tally) != 2 {
		t.Errorf("tally C1 = %v, %v", tally, err)
	}
	var got []replica.Feedback
	cursor := ""
	for {
		page, next, err := a.FeedbackRecords(ctx, cursor, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		got, cursor = append(got, page...), next
	}
	if len(got) != len(recs) {
		t.Fatalf("read %d records; want %d", len(got), len(recs))
	}
	for i := range recs {
		if got[i] != recs[i] {
			t.Errorf("record %d = %+v; want %+v", i, got[i], recs[i])
		}
	}
}

// TestUpdateSettings: changes made at once through two replicas both
// hold: each is applied to what the other left.
func TestUpdateSettings(t *testing.T) {
	srv := newServer(t)
	ctx := context.Background()
	a := open(t, srv.URL(0), replica.Config{})
	b := open(t, srv.URL(0), replica.Config{})
	var wg sync.WaitGroup
	for i, s := range []*replica.Store{a, b} {
		wg.Go(func() {
			for j := range 20 {
				err := s.UpdateSettings(ctx, "C1", func(old []byte) ([]byte, error) {
					return append(old, byte('a'+i)), nil
				})
				if err != nil {
					t.Errorf("update %d of %d: %v", j, i, err)
				}
			}
		})
	}
	wg.Wait()
	v, err := a.Settings(ctx, "C1")
	if err != nil || strings.Count(string(v), "a") != 20 || strings.Count(string(v), "b") != 20 {
		t.Errorf("settings after 20 updates through each replica: %q, %v", v, err)
	}
}
