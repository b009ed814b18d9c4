package hosts

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Link is what joins each host to the switch: a rate (bits per second,
// 0 for the veth's own speed) and a one-way delay (0 for none).
type Link struct {
	// Rate in bits per second, as tc counts them (k = 1000).
	Rate int64 `json:"rate_bit_s,omitempty"`
	// Text is the link as given (--link).
	Text string `json:"text,omitempty"`
	// Delay is added to every byte each way between two hosts: a
	// request and its reply pay it twice.
	Delay time.Duration `json:"delay,omitempty"`
}

// MaxDelay bounds --link's delay: beyond it the tiers' own timeouts
// (connection, keep-alive) would be what a run measures.
const MaxDelay = time.Second

// LinkSyntax says what --link takes, for messages.
const LinkSyntax = "RATE[,DELAY]: a rate in bit, kbit, mbit or gbit per second (100mbit) and a one-way delay (0.5ms, at most 1s)"

// ParseLink reads --link: "100mbit" or "100mbit,0.5ms".
func ParseLink(s string) (Link, error) {
	rate, delay, hasDelay := strings.Cut(strings.TrimSpace(s), ",")
	l := Link{Text: strings.TrimSpace(s)}
	var err error
	if l.Rate, err = parseRate(rate); err != nil {
		return Link{}, fmt.Errorf("--link %q: %v; want %s", s, err, LinkSyntax)
	}
	if hasDelay {
		d, err := time.ParseDuration(strings.TrimSpace(delay))
		switch {
		case err != nil:
			return Link{}, fmt.Errorf("--link %q: delay %q is not a duration; want %s", s, delay, LinkSyntax)
		case d <= 0 || d > MaxDelay:
			return Link{}, fmt.Errorf("--link %q: delay %v out of range; want %s", s, d, LinkSyntax)
		}
		l.Delay = d
	}
	return l, nil
}

// units are tc's rate units, in bits per second.
var units = []struct {
	suffix string
	bits   int64
}{{"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}, {"bit", 1}}

func parseRate(s string) (int64, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	for _, u := range units {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			v, err := strconv.ParseFloat(n, 64)
			if err != nil || v <= 0 {
				return 0, fmt.Errorf("rate %q is not a positive number of %s/s", s, u.suffix)
			}
			bits := int64(v * float64(u.bits))
			if bits < 8000 || bits > 100e9 {
				return 0, fmt.Errorf("rate %q out of range (8kbit to 100gbit)", s)
			}
			return bits, nil
		}
	}
	if s == "" {
		return 0, errors.New("no rate")
	}
	return 0, fmt.Errorf("rate %q has no unit", s)
}

// String writes the link for a sentence: "100mbit, 0.5ms each way".
func (l Link) String() string {
	var parts []string
	if l.Rate > 0 {
		parts = append(parts, rateText(l.Rate))
	}
	if l.Delay > 0 {
		parts = append(parts, l.Delay.String()+" each way")
	}
	return strings.Join(parts, ", ")
}

func rateText(bits int64) string {
	for _, u := range units {
		if bits%u.bits == 0 {
			return fmt.Sprintf("%d%s", bits/u.bits, u.suffix)
		}
	}
	return fmt.Sprintf("%dbit", bits)
}

// Burst is the bucket tbf is given, in bytes: what the rate sends in
// burstTime, and never less than burstMin. A veth hands tbf segments of
// up to 64 KiB (GSO): tbf splits the larger than its bucket, so a small
// bucket costs CPU; one much larger than a tick's worth lets bursts pass
// above the rate. BenchmarkLinkRate measures what comes through.
func (l Link) Burst() int64 {
	return max(l.Rate/8*int64(burstTime)/int64(time.Second), burstMin)
}

// The tbf values (see Burst), chosen with BenchmarkLinkRate.
const (
	burstTime = 4 * time.Millisecond
	burstMin  = 16 << 10
	// queueLatency is how long a packet may wait in tbf's queue before it
	// is dropped: long enough that TCP's own window, not drops, is what
	// keeps a sender to the rate.
	queueLatency = 100 * time.Millisecond
)

// tbf is the qdisc's arguments for the link's rate.
func (l Link) tbf() []string {
	return []string{"tbf", "rate", fmt.Sprintf("%dbit", l.Rate), "burst", strconv.FormatInt(l.Burst(), 10),
		"latency", fmt.Sprintf("%dms", queueLatency.Milliseconds())}
}

// How says how the link is realised, for the result.
func (l Link) How() string {
	var parts []string
	if l.Rate > 0 {
		parts = append(parts, fmt.Sprintf("tc tbf on both ends of each host's veth (burst %d B, latency %v)", l.Burst(), queueLatency))
	}
	if l.Delay > 0 {
		parts = append(parts, "a delaying TCP proxy in front of each host's service (no netem in this kernel)")
	}
	return strings.Join(parts, "; ")
}
