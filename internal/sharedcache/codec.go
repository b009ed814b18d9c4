package sharedcache

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/tierbench/tierbench/internal/container"
)

// The state's encoding: a format byte, the version (varint), then each
// field in declaration order by kind: Int a varint, Float 8 bytes, String
// a length (uvarint) and its bytes, Bytes a length + 1 (0 is nil, which
// a NULL reads as) and its bytes, Time a zone byte then Unix nanoseconds
// (varint; a fixed zone's offset follows). A Stock-Online account is
// about 30 bytes this way, 130 as JSON, and decodes without allocating
// but for its strings (see BenchmarkCodec).
const format = 1

const (
	zoneZero = iota
	zoneUTC
	zoneLocal
	zoneFixed
)

var errCorrupt = errors.New("sharedcache: corrupt state")

// appendState appends the encoding of vals (t's fields) and version to b.
func appendState(b []byte, t *container.Type, vals []container.Value, version int64) []byte {
	b = append(b, format)
	b = binary.AppendVarint(b, version)
	for f, c := range t.Fields {
		v := &vals[f]
		switch c.Kind {
		case container.Int:
			b = binary.AppendVarint(b, v.I)
		case container.Float:
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v.F))
		case container.String:
			b = binary.AppendUvarint(b, uint64(len(v.S)))
			b = append(b, v.S...)
		case container.Bytes:
			if v.B == nil {
				b = binary.AppendUvarint(b, 0)
				continue
			}
			b = binary.AppendUvarint(b, uint64(len(v.B))+1)
			b = append(b, v.B...)
		case container.Time:
			b = appendTime(b, v.T)
		}
	}
	return b
}

func appendTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(b, zoneZero)
	}
	switch t.Location() {
	case time.UTC:
		b = append(b, zoneUTC)
	case time.Local:
		b = append(b, zoneLocal)
	default:
		_, off := t.Zone()
		b = append(b, zoneFixed)
		b = binary.AppendVarint(b, int64(off))
	}
	return binary.AppendVarint(b, t.UnixNano())
}

// decodeState reads an encoding of t's state into vals and version.
func decodeState(b []byte, t *container.Type, vals []container.Value, version *int64) error {
	if len(b) == 0 || b[0] != format {
		return fmt.Errorf("%w of %s: format %v", errCorrupt, t.Name, b[:min(len(b), 1)])
	}
	d := decoder{b: b[1:]}
	*version = d.varint()
	for f, c := range t.Fields {
		v := &vals[f]
		switch c.Kind {
		case container.Int:
			v.I = d.varint()
		case container.Float:
			v.F = math.Float64frombits(binary.LittleEndian.Uint64(d.next(8)))
		case container.String:
			v.S = string(d.next(int(d.uvarint())))
		case container.Bytes:
			n := d.uvarint()
			if n == 0 {
				v.B = nil
				continue
			}
			src := d.next(int(n - 1))
			v.B = append(make([]byte, 0, len(src)), src...)
		case container.Time:
			v.T = d.time()
		}
	}
	if d.bad || len(d.b) != 0 {
		return fmt.Errorf("%w of %s: %d bytes do not hold its %d fields", errCorrupt, t.Name, len(b), len(t.Fields))
	}
	return nil
}

// decoder reads an encoding; a short one sets bad and reads zeros.
type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.bad, d.b = true, nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.bad, d.b = true, nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) next(n int) []byte {
	if n < 0 || n > len(d.b) {
		d.bad, d.b = true, nil
		return make([]byte, 8) // enough for any fixed-size read; the state is refused
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}

func (d *decoder) time() time.Time {
	zone := d.next(1)[0]
	switch zone {
	case zoneZero:
		return time.Time{}
	case zoneUTC:
		return time.Unix(0, d.varint()).UTC()
	case zoneLocal:
		return time.Unix(0, d.varint())
	case zoneFixed:
		off := d.varint()
		return time.Unix(0, d.varint()).In(time.FixedZone("", int(off)))
	}
	d.bad = true
	return time.Time{}
}
