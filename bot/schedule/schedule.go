package schedule

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"time"
)

// Defaults of [Limits].
const (
	DefaultPerChannel  = 10
	DefaultPerUser     = 5
	DefaultMinInterval = time.Hour
	// DefaultGrace: a fire missed while no replica ran is made up on
	// start when it is at most this late; otherwise it is skipped and
	// the owner told.
	DefaultGrace = time.Hour
	// DefaultRetries: a failed fire is tried again this many times,
	// DefaultBackoff after the first failure, four times longer after
	// each next one (1, 4, 16 minutes).
	DefaultRetries = 3
	DefaultBackoff = time.Minute
	// DefaultPoll: how often the schedules are read again, to see
	// those other replicas added, paused or deleted.
	DefaultPoll = 30 * time.Second
	// claimTTL: how long a fire's claim is kept (see Store.Claim).
	claimTTL = 48 * time.Hour
)

// Limits are what an operator may set.
type Limits struct {
	PerChannel  int           // schedules a channel may hold
	PerUser     int           // schedules a user may own
	MinInterval time.Duration // the shortest time between two fires
	Grace       time.Duration
	Retries     int
	Backoff     time.Duration
	Poll        time.Duration
}

// WithDefaults fills the zero fields.
func (l Limits) WithDefaults() Limits {
	l.PerChannel = cmp.Or(l.PerChannel, DefaultPerChannel)
	l.PerUser = cmp.Or(l.PerUser, DefaultPerUser)
	l.MinInterval = cmp.Or(l.MinInterval, DefaultMinInterval)
	l.Grace = cmp.Or(l.Grace, DefaultGrace)
	l.Retries = cmp.Or(l.Retries, DefaultRetries)
	l.Backoff = cmp.Or(l.Backoff, DefaultBackoff)
	l.Poll = cmp.Or(l.Poll, DefaultPoll)
	return l
}

// A Schedule is a question answered again at the times of its plan.
type Schedule struct {
	ID       string `json:"id"`
	Channel  string `json:"channel"`
	Owner    string `json:"owner"`    // the user who set it up
	Question string `json:"question"` // as asked, mentions and all
	// Thread is the thread the question was first asked in, if any.
	Thread  string    `json:"thread,omitempty"`
	Spec    string    `json:"spec"` // five cron fields
	TZ      string    `json:"tz"`   // IANA name
	Created time.Time `json:"created"`
	// Paused says why the schedule does not fire ("" when it does):
	// paused by a person, or by the bot (owner gone, channel archived).
	Paused   string `json:"paused,omitempty"`
	PausedBy string `json:"paused_by,omitempty"`
	// Last is the last of its times the bot dealt with: fired (Err
	// empty), failed after every try, or skipped.
	Last *Fire `json:"last,omitempty"`
	// Good is the last fire that answered, with its figures: what the
	// next answer is compared with.
	Good *Fire `json:"good,omitempty"`
}

// A Fire is one of a schedule's times, dealt with.
type Fire struct {
	At      time.Time `json:"at"`                // the time it was due
	Done    time.Time `json:"done,omitzero"`     // when it ended
	Message string    `json:"message,omitempty"` // the answer's message (ts)
	Err     string    `json:"err,omitempty"`     // what failed, after every try
	// Skipped: missed while no replica ran, later than the grace
	// window; Missed counts the times it stood for.
	Skipped bool `json:"skipped,omitempty"`
	Missed  int  `json:"missed,omitempty"`
	// Figures are the answer's numbers the sources held, by label.
	Figures []Figure `json:"figures,omitempty"`
}

// A Figure is a number an answer reported, found in its runs or queries.
type Figure struct {
	Label string  `json:"label"`
	Text  string  `json:"text"`
	Value float64 `json:"value"`
}

// base is the time after which the schedule's next time is looked for.
func (s *Schedule) base() time.Time {
	if s.Last != nil && s.Last.At.After(s.Created) {
		return s.Last.At
	}
	return s.Created
}

// Plan parses the schedule's plan.
func (s *Schedule) Plan() (*Plan, error) { return NewPlan(s.Spec, s.TZ) }

// Next returns the schedule's next time after now (zero if none).
func (s *Schedule) Next(now time.Time) time.Time {
	p, err := s.Plan()
	if err != nil {
		return time.Time{}
	}
	b := s.base()
	if now.After(b) {
		b = now
	}
	return p.Next(b)
}

// NewID returns a new schedule's id: "s" and 10 hex digits.
func NewID() string {
	var b [5]byte
	rand.Read(b[:])
	return "s" + hex.EncodeToString(b[:])
}
