package remote

import (
	"context"
	"sync/atomic"
	"time"
)

// Meter counts the remote calls made with a context that carries it
// (WithMeter: the pages of one script of the web tier, one interaction in
// a test). Safe for concurrent use; counting costs a few atomic adds and
// no allocation. A call whose context has no Meter is not counted.
type Meter struct {
	calls, failed     atomic.Int64
	bytesOut, bytesIn atomic.Int64
	callNanos         atomic.Int64
	beanNanos         atomic.Int64
}

// Counts is a Meter read at one moment.
type Counts struct {
	Calls  int64 // calls made
	Failed int64 // of which ended in an error (the bean's or the layer's)
	// BytesOut and BytesIn: the calls' messages as the protocol encodes
	// them on the wire (protobuf with gRPC's 5-byte frame prefix, or with
	// a lean frame's 4-byte length; JSON bodies), headers excluded.
	BytesOut, BytesIn int64
	// Call: the time from the call to its reply, as the caller saw it.
	// Bean: the part of it the server spent in its handler, as the server
	// reported it. The rest is the layer's: serialization both ways, the
	// network, the server's own dispatch.
	Call, Bean time.Duration
}

// Layer is the time the calls spent in the communication layer.
func (c Counts) Layer() time.Duration { return c.Call - c.Bean }

// Add is c plus d.
func (c Counts) Add(d Counts) Counts {
	return Counts{Calls: c.Calls + d.Calls, Failed: c.Failed + d.Failed, BytesOut: c.BytesOut + d.BytesOut,
		BytesIn: c.BytesIn + d.BytesIn, Call: c.Call + d.Call, Bean: c.Bean + d.Bean}
}

// Counts reads m.
func (m *Meter) Counts() Counts {
	return Counts{Calls: m.calls.Load(), Failed: m.failed.Load(), BytesOut: m.bytesOut.Load(),
		BytesIn: m.bytesIn.Load(), Call: time.Duration(m.callNanos.Load()), Bean: time.Duration(m.beanNanos.Load())}
}

type meterKey struct{}

// WithMeter returns a context whose remote calls m counts.
func WithMeter(ctx context.Context, m *Meter) context.Context {
	return context.WithValue(ctx, meterKey{}, m)
}

func meterOf(ctx context.Context) *Meter {
	m, _ := ctx.Value(meterKey{}).(*Meter)
	return m
}

func (m *Meter) bytes(out, in int64) {
	m.bytesOut.Add(out)
	m.bytesIn.Add(in)
}

func (m *Meter) done(took time.Duration, err error) {
	m.calls.Add(1)
	m.callNanos.Add(int64(took))
	if err != nil {
		m.failed.Add(1)
	}
}
