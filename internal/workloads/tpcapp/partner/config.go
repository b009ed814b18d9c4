package partner

import (
	"cmp"
	"errors"
	"fmt"
)

// Defaults of Config.
const (
	// DefaultApprove: a partner approves 98% of requests unless told
	// otherwise. The specification's ratio is not in the reference text;
	// 2% declined is a card network's usual order of magnitude, and it
	// exercises the decline path in every run. docs/tpcapp.md.
	DefaultApprove = 0.98
	DefaultMaxBody = 64 << 10
	// DefaultNoticeMaxBody bounds an SNE notice, whose label image is
	// tens of KiB (base64 adds a third).
	DefaultNoticeMaxBody = 1 << 20
)

// Config of a partner server.
type Config struct {
	Kind  Kind
	Delay Delay
	// Approve is the share of POV and PGE requests approved, in [0, 1];
	// nil means DefaultApprove (a pointer, since 0 is a valid ratio).
	Approve *float64
	// FailRate is the share of requests answered 503 before any effect, in
	// [0, 1]: a partner that is down for part of the time.
	FailRate float64
	// MaxBody bounds a request body (default 64 KiB, 1 MiB for SNE).
	MaxBody int64
}

// WithDefaults fills the zero fields.
func (c Config) WithDefaults() Config {
	if c.Approve == nil {
		a := DefaultApprove
		c.Approve = &a
	}
	if c.Delay.Kind == "" {
		c.Delay = DefaultDelay
	}
	if c.Kind == SNE {
		c.MaxBody = cmp.Or(c.MaxBody, DefaultNoticeMaxBody)
	}
	c.MaxBody = cmp.Or(c.MaxBody, DefaultMaxBody)
	return c
}

// Validate reports every field out of range.
func (c Config) Validate() error {
	var errs []error
	if _, err := ParseKind(string(c.Kind)); err != nil {
		errs = append(errs, err)
	}
	if c.Approve != nil && (*c.Approve < 0 || *c.Approve > 1) {
		errs = append(errs, fmt.Errorf("approve %g: want a share in [0, 1]", *c.Approve))
	}
	if c.FailRate < 0 || c.FailRate > 1 {
		errs = append(errs, fmt.Errorf("fail rate %g: want a share in [0, 1]", c.FailRate))
	}
	if c.MaxBody < 0 {
		errs = append(errs, fmt.Errorf("max body %d: want >= 0 (0 = %d)", c.MaxBody, DefaultMaxBody))
	}
	if c.Delay.Kind != "" {
		if _, err := ParseDelay(c.Delay.String()); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
