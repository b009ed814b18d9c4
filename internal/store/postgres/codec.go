package postgres

import (
	"encoding/binary"
	"math"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// kind is what the fast path knows of a parameter's or a column's type:
// how to encode and decode it, and in which wire format.
type kind uint8

const (
	kindOther kind = iota // not handled here: pgx encodes or decodes it
	kindInt2
	kindInt4
	kindInt8
	kindFloat4
	kindFloat8
	kindBool
	kindTimestamp
	kindTimestamptz
	kindBytea
	kindText    // text, varchar, bpchar, name: the same bytes in both formats
	kindNumeric // text format: its binary form is base-10000 digits
)

func kindOf(oid uint32) kind {
	switch oid {
	case pgtype.Int2OID:
		return kindInt2
	case pgtype.Int4OID:
		return kindInt4
	case pgtype.Int8OID:
		return kindInt8
	case pgtype.Float4OID:
		return kindFloat4
	case pgtype.Float8OID:
		return kindFloat8
	case pgtype.BoolOID:
		return kindBool
	case pgtype.TimestampOID:
		return kindTimestamp
	case pgtype.TimestamptzOID:
		return kindTimestamptz
	case pgtype.ByteaOID:
		return kindBytea
	case pgtype.TextOID, pgtype.VarcharOID, pgtype.BPCharOID, pgtype.NameOID:
		return kindText
	case pgtype.NumericOID:
		return kindNumeric
	}
	return kindOther
}

// format is the wire format the fast path uses for k: binary where it is
// a fixed-width copy of the value, text where text is the value (strings)
// or cheaper to produce (numeric) and for every type it does not know, so
// that pgx's text decoders, which cover every built-in type, can read
// those columns.
func (k kind) format() int16 {
	switch k {
	case kindInt2, kindInt4, kindInt8, kindFloat4, kindFloat8, kindBool, kindTimestamp, kindTimestamptz, kindBytea:
		return pgtype.BinaryFormatCode
	}
	return pgtype.TextFormatCode
}

// microseconds from the Unix epoch to PostgreSQL's, 2000-01-01 UTC.
const unixToY2K = 946_684_800 * 1_000_000

// The timestamps decoded here: years 1 to 9999, well inside what pgx
// accepts (its bounds are unexported), so that whatever the fast path
// decodes pgx would have decoded alike; infinity and the rest go to pgx,
// which reports them as it always has.
const (
	minMicros = -63_082_281_600 * 1_000_000 // 0001-01-01 00:00:00 UTC
	maxMicros = 252_455_615_999 * 1_000_000 // 9999-12-31 23:59:59 UTC
)

// appendParam encodes arg as a parameter of kind k onto buf, as pgx
// would encode it. ok is false for a combination it does not know, which
// pgx then runs; null reports a NULL (nothing appended). Pointers are
// followed, a nil one is NULL, as in pgx: the container passes its
// entities' fields by address.
func appendParam(buf []byte, k kind, arg any) (out []byte, null, ok bool) {
	switch a := arg.(type) {
	case nil:
		return buf, true, true
	case int64:
		return appendInt(buf, k, a)
	case int:
		return appendInt(buf, k, int64(a))
	case int32:
		return appendInt(buf, k, int64(a))
	case float64:
		return appendFloat(buf, k, a)
	case string:
		return appendString(buf, k, a)
	case []byte:
		return appendBytes(buf, k, a)
	case bool:
		return appendBool(buf, k, a)
	case time.Time:
		return appendTime(buf, k, a)
	case *int64:
		if a == nil {
			return buf, true, true
		}
		return appendInt(buf, k, *a)
	case *int:
		if a == nil {
			return buf, true, true
		}
		return appendInt(buf, k, int64(*a))
	case *int32:
		if a == nil {
			return buf, true, true
		}
		return appendInt(buf, k, int64(*a))
	case *float64:
		if a == nil {
			return buf, true, true
		}
		return appendFloat(buf, k, *a)
	case *string:
		if a == nil {
			return buf, true, true
		}
		return appendString(buf, k, *a)
	case *[]byte:
		if a == nil {
			return buf, true, true
		}
		return appendBytes(buf, k, *a)
	case *bool:
		if a == nil {
			return buf, true, true
		}
		return appendBool(buf, k, *a)
	case *time.Time:
		if a == nil {
			return buf, true, true
		}
		return appendTime(buf, k, *a)
	}
	return buf, false, false
}

func appendFloat(buf []byte, k kind, a float64) ([]byte, bool, bool) {
	switch k {
	case kindFloat8:
		return binary.BigEndian.AppendUint64(buf, math.Float64bits(a)), false, true
	case kindFloat4:
		return binary.BigEndian.AppendUint32(buf, math.Float32bits(float32(a))), false, true
	case kindNumeric:
		if !math.IsNaN(a) && !math.IsInf(a, 0) {
			return strconv.AppendFloat(buf, a, 'f', -1, 64), false, true
		}
	}
	return buf, false, false
}

func appendString(buf []byte, k kind, a string) ([]byte, bool, bool) {
	if k == kindText {
		return append(buf, a...), false, true
	}
	return buf, false, false
}

func appendBytes(buf []byte, k kind, a []byte) ([]byte, bool, bool) {
	if a == nil {
		return buf, true, true
	}
	if k == kindText || k == kindBytea {
		return append(buf, a...), false, true
	}
	return buf, false, false
}

func appendBool(buf []byte, k kind, a bool) ([]byte, bool, bool) {
	if k != kindBool {
		return buf, false, false
	}
	var b byte
	if a {
		b = 1
	}
	return append(buf, b), false, true
}

func appendTime(buf []byte, k kind, a time.Time) ([]byte, bool, bool) {
	switch k {
	case kindTimestamptz:
		return appendMicros(buf, a), false, true
	case kindTimestamp:
		// A timestamp without time zone is the wall clock of a's
		// location, as pgx sends it.
		if a.Location() != time.UTC {
			a = time.Date(a.Year(), a.Month(), a.Day(), a.Hour(), a.Minute(), a.Second(), a.Nanosecond(), time.UTC)
		}
		return appendMicros(buf, a), false, true
	}
	return buf, false, false
}

func appendInt(buf []byte, k kind, v int64) ([]byte, bool, bool) {
	switch k {
	case kindInt8:
		return binary.BigEndian.AppendUint64(buf, uint64(v)), false, true
	case kindInt4:
		if v >= math.MinInt32 && v <= math.MaxInt32 {
			return binary.BigEndian.AppendUint32(buf, uint32(v)), false, true
		}
	case kindInt2:
		if v >= math.MinInt16 && v <= math.MaxInt16 {
			return binary.BigEndian.AppendUint16(buf, uint16(v)), false, true
		}
	case kindFloat8:
		return binary.BigEndian.AppendUint64(buf, math.Float64bits(float64(v))), false, true
	case kindFloat4:
		return binary.BigEndian.AppendUint32(buf, math.Float32bits(float32(v))), false, true
	case kindNumeric:
		return strconv.AppendInt(buf, v, 10), false, true
	}
	return buf, false, false // out of range: pgx reports it
}

func appendMicros(buf []byte, t time.Time) []byte {
	us := t.Unix()*1_000_000 + int64(t.Nanosecond())/1000 - unixToY2K
	return binary.BigEndian.AppendUint64(buf, uint64(us))
}

// decode stores src, a column of kind k in k's format, into dst, as pgx
// would. It reports false, leaving dst alone, for what it does not
// handle: other destinations, NULL (except into *[]byte), values out of
// the destination's range; pgx decodes those, or reports the error it
// always has.
func decode(k kind, src []byte, dst any) bool {
	switch d := dst.(type) {
	case *int64:
		v, ok := decodeInt(k, src)
		if ok {
			*d = v
		}
		return ok
	case *int:
		v, ok := decodeInt(k, src)
		if ok && int64(int(v)) == v {
			*d = int(v)
			return true
		}
	case *int32:
		v, ok := decodeInt(k, src)
		if ok && v >= math.MinInt32 && v <= math.MaxInt32 {
			*d = int32(v)
			return true
		}
	case *float64:
		switch {
		case k == kindFloat8 && len(src) == 8:
			*d = math.Float64frombits(binary.BigEndian.Uint64(src))
			return true
		case k == kindFloat4 && len(src) == 4:
			*d = float64(math.Float32frombits(binary.BigEndian.Uint32(src)))
			return true
		case k == kindNumeric && src != nil:
			f, err := strconv.ParseFloat(string(src), 64)
			if err == nil {
				*d = f
				return true
			}
		}
	case *string:
		if k == kindText && src != nil {
			*d = string(src)
			return true
		}
	case **string: // a nullable column (RUBiS's item image path)
		if k == kindText {
			if src == nil {
				*d = nil
			} else {
				v := string(src)
				*d = &v
			}
			return true
		}
	case *[]byte:
		if k == kindText || k == kindBytea {
			if src == nil {
				*d = nil
			} else {
				*d = append(make([]byte, 0, len(src)), src...)
			}
			return true
		}
	case *bool:
		if k == kindBool && len(src) == 1 {
			*d = src[0] == 1
			return true
		}
	case *time.Time:
		if (k != kindTimestamptz && k != kindTimestamp) || len(src) != 8 {
			return false
		}
		us := int64(binary.BigEndian.Uint64(src))
		if us < minMicros || us > maxMicros {
			return false
		}
		// The same arithmetic as pgx's: a timestamptz in the local
		// time zone, a timestamp in UTC.
		t := time.Unix(unixToY2K/1_000_000+us/1_000_000, (unixToY2K%1_000_000*1_000)+(us%1_000_000*1_000))
		if k == kindTimestamp {
			t = t.UTC()
		}
		*d = t
		return true
	}
	return false
}

func decodeInt(k kind, src []byte) (int64, bool) {
	switch {
	case k == kindInt8 && len(src) == 8:
		return int64(binary.BigEndian.Uint64(src)), true
	case k == kindInt4 && len(src) == 4:
		return int64(int32(binary.BigEndian.Uint32(src))), true
	case k == kindInt2 && len(src) == 2:
		return int64(int16(binary.BigEndian.Uint16(src))), true
	}
	return 0, false
}
