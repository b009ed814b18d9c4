package emulator

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Defaults of Config, applied by WithDefaults to fields left zero.
const (
	DefaultLeadTimeUnit   = 5 * time.Second // the kit's
	DefaultRetryMax       = 5 * time.Second
	DefaultMaxBody        = 1 << 20
	DefaultMaxInFlight    = 64
	DefaultAttemptTimeout = 10 * time.Second

	// retryStart is the delay before the first redelivery; it doubles per
	// failed attempt up to RetryMax.
	retryStart = 50 * time.Millisecond
	// shutdownGrace bounds how long Serve waits for requests in progress.
	shutdownGrace = 5 * time.Second
)

// Config of an emulator. The zero value is usable: every zero field takes
// its default.
type Config struct {
	// LeadTimeUnit is how long one unit of a PO line's lead time lasts
	// for a PO that carries no unit of its own (default 5 s, the kit's;
	// short runs scale it down).
	LeadTimeUnit time.Duration
	// OwnUnit: LeadTimeUnit even for POs that carry their sender's, as a
	// partner slower or faster than agreed would (fault tests).
	OwnUnit bool
	// RetryMax caps the delay between redelivery attempts; the backoff
	// starts at 50 ms and doubles (default 5 s).
	RetryMax time.Duration
	// MaxBody is the largest request body in bytes; larger requests get 413
	// (default 1 MiB).
	MaxBody int64
	// MaxInFlight caps the delivery attempts in progress at once; due
	// deliveries beyond it wait their turn (default 64).
	MaxInFlight int
	// AttemptTimeout bounds one delivery attempt; a callback slower than
	// this counts as failed and is retried (default 10 s).
	AttemptTimeout time.Duration
	// ResponseDelay is how long the emulator takes before it handles a PO
	// and answers: the partner's network and processing, which a sender
	// inside a transaction holds its locks through (default 0, none).
	ResponseDelay time.Duration
	// Logger receives start/stop at Info and per-PO events at Debug
	// (default: discard).
	Logger *slog.Logger
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	c.LeadTimeUnit = cmp.Or(c.LeadTimeUnit, DefaultLeadTimeUnit)
	c.RetryMax = cmp.Or(c.RetryMax, DefaultRetryMax)
	c.MaxBody = cmp.Or(c.MaxBody, DefaultMaxBody)
	c.MaxInFlight = cmp.Or(c.MaxInFlight, DefaultMaxInFlight)
	c.AttemptTimeout = cmp.Or(c.AttemptTimeout, DefaultAttemptTimeout)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports every field out of range, naming the field, its value
// and what is allowed. Zero fields are valid (they take defaults).
func (c Config) Validate() error {
	var errs []error
	if c.LeadTimeUnit < 0 {
		errs = append(errs, fmt.Errorf("emulator: LeadTimeUnit is %v, want >= 0 (0 = %v)", c.LeadTimeUnit, DefaultLeadTimeUnit))
	}
	if c.RetryMax < 0 {
		errs = append(errs, fmt.Errorf("emulator: RetryMax is %v, want >= 0 (0 = %v)", c.RetryMax, DefaultRetryMax))
	}
	if c.MaxBody < 0 {
		errs = append(errs, fmt.Errorf("emulator: MaxBody is %d, want >= 0 (0 = %d)", c.MaxBody, DefaultMaxBody))
	}
	if c.MaxInFlight < 0 {
		errs = append(errs, fmt.Errorf("emulator: MaxInFlight is %d, want >= 0 (0 = %d)", c.MaxInFlight, DefaultMaxInFlight))
	}
	if c.AttemptTimeout < 0 {
		errs = append(errs, fmt.Errorf("emulator: AttemptTimeout is %v, want >= 0 (0 = %v)", c.AttemptTimeout, DefaultAttemptTimeout))
	}
	if c.ResponseDelay < 0 {
		errs = append(errs, fmt.Errorf("emulator: ResponseDelay is %v, want >= 0 (0 = none)", c.ResponseDelay))
	}
	return errors.Join(errs...)
}
