package postgres

import (
	"bytes"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// The codec must encode every argument it accepts to pgx's very bytes,
// and decode what it accepts to pgx's very values.
func TestCodecEncodesAsPgx(t *testing.T) {
	east := time.FixedZone("UTC+5", 5*3600)
	tests := []struct {
		oid uint32
		arg any
	}{
		{pgtype.Int8OID, int64(math.MinInt64)},
		{pgtype.Int8OID, int64(math.MaxInt64)},
		{pgtype.Int8OID, -1},
		{pgtype.Int8OID, int32(7)},
		{pgtype.Int4OID, int64(math.MinInt32)},
		{pgtype.Int4OID, math.MaxInt32},
		{pgtype.Int2OID, int64(-32768)},
		{pgtype.Int2OID, int32(32767)},
		{pgtype.Float8OID, -1.5e300},
		{pgtype.Float8OID, 5e-324},
		{pgtype.Float8OID, int64(1) << 60},
		{pgtype.Float4OID, 0.1},
		{pgtype.Float4OID, 3},
		{pgtype.NumericOID, int64(-42)},
		{pgtype.NumericOID, 1234.5678},
		{pgtype.NumericOID, 1e21},
		{pgtype.NumericOID, 1e-7},
		{pgtype.BoolOID, true},
		{pgtype.BoolOID, false},
		{pgtype.TextOID, "Grüße, 東京 🚀"},
		{pgtype.VarcharOID, ""},
		{pgtype.BPCharOID, "ab"},
		{pgtype.TextOID, []byte("raw")},
		{pgtype.ByteaOID, []byte{0, 1, 255}},
		{pgtype.ByteaOID, []byte{}},
		{pgtype.TimestamptzOID, time.Date(2026, 11, 28, 4, 9, 53, 123_456_789, east)},
		{pgtype.TimestamptzOID, time.Date(1969, 12, 31, 23, 59, 59, 999_999_000, time.UTC)},
		{pgtype.TimestampOID, time.Date(1969, 12, 31, 23, 59, 59, 999_999_000, east)},
		{pgtype.TimestampOID, time.Date(2000, 1, 1, 0, 0, 0, 1000, time.UTC)},
		// By address, as the container passes its entities' fields.
		{pgtype.Int8OID, ptr(int64(-7))},
		{pgtype.Int4OID, ptr(int64(7))},
		{pgtype.Int4OID, ptr(7)},
		{pgtype.Int2OID, ptr(int32(7))},
		{pgtype.Float8OID, ptr(0.5)},
		{pgtype.NumericOID, ptr(0.5)},
		{pgtype.VarcharOID, ptr("Grüße")},
		{pgtype.ByteaOID, ptr([]byte{1})},
		{pgtype.BoolOID, ptr(true)},
		{pgtype.TimestampOID, ptr(time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC))},
	}
	m := pgtype.NewMap()
	for _, tt := range tests {
		k := kindOf(tt.oid)
		got, null, ok := appendParam(make([]byte, 0, 8), k, tt.arg)
		if !ok || null {
			t.Errorf("%d %T %v: not encoded (ok %t, null %t)", tt.oid, tt.arg, tt.arg, ok, null)
			continue
		}
		want, err := m.Encode(tt.oid, k.format(), tt.arg, nil)
		if err != nil {
			t.Fatalf("pgx: %d %T %v: %v", tt.oid, tt.arg, tt.arg, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%d %T %v: %x, pgx %x", tt.oid, tt.arg, tt.arg, got, want)
		}
	}
}

// What the codec leaves to pgx: other types, and values pgx would refuse.
func TestCodecLeavesToPgx(t *testing.T) {
	tests := []struct {
		oid uint32
		arg any
	}{
		{pgtype.Int4OID, int64(math.MaxInt32) + 1},
		{pgtype.Int2OID, 40000},
		{pgtype.Int8OID, uint64(1)},
		{pgtype.Int8OID, "42"},
		{pgtype.Int8OID, 1.5},
		{pgtype.NumericOID, math.NaN()},
		{pgtype.NumericOID, "1.5"},
		{pgtype.DateOID, time.Now()},
		{pgtype.TextOID, 42},
		{pgtype.ByteaOID, "text"},
		{pgtype.UUIDOID, "6ba7b810-9dad-11d1-80b4-00c04fd430c8"},
		{pgtype.Int8OID, new(int16)},
	}
	for _, tt := range tests {
		if _, _, ok := appendParam(nil, kindOf(tt.oid), tt.arg); ok {
			t.Errorf("%d %T %v: encoded; pgx should have it", tt.oid, tt.arg, tt.arg)
		}
	}
	if _, null, ok := appendParam(nil, kindOther, nil); !ok || !null {
		t.Error("nil is NULL whatever the type")
	}
	for _, arg := range []any{[]byte(nil), (*int64)(nil), (*string)(nil), (*time.Time)(nil), ptr([]byte(nil))} {
		if _, null, ok := appendParam(nil, kindBytea, arg); !ok || !null {
			t.Errorf("%T %v: not NULL", arg, arg)
		}
	}
}

func TestCodecDecodesAsPgx(t *testing.T) {
	m := pgtype.NewMap()
	enc := func(oid uint32, v any) []byte {
		b, err := m.Encode(oid, kindOf(oid).format(), v, nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := []struct {
		oid uint32
		src []byte
		dst func() any // a new destination
	}{
		{pgtype.Int8OID, enc(pgtype.Int8OID, int64(math.MinInt64)), func() any { return new(int64) }},
		{pgtype.Int8OID, enc(pgtype.Int8OID, int64(math.MaxInt64)), func() any { return new(int) }},
		{pgtype.Int4OID, enc(pgtype.Int4OID, int32(math.MinInt32)), func() any { return new(int32) }},
		{pgtype.Int4OID, enc(pgtype.Int4OID, int32(-5)), func() any { return new(int64) }},
		{pgtype.Int2OID, enc(pgtype.Int2OID, int16(-32768)), func() any { return new(int) }},
		{pgtype.Float8OID, enc(pgtype.Float8OID, 5e-324), func() any { return new(float64) }},
		{pgtype.Float4OID, enc(pgtype.Float4OID, float32(0.1)), func() any { return new(float64) }},
		{pgtype.NumericOID, []byte("1234.567800"), func() any { return new(float64) }},
		{pgtype.NumericOID, []byte("-0.000001"), func() any { return new(float64) }},
		{pgtype.BoolOID, enc(pgtype.BoolOID, true), func() any { return new(bool) }},
		{pgtype.TextOID, []byte("Grüße"), func() any { return new(string) }},
		{pgtype.BPCharOID, []byte("ab    "), func() any { return new(string) }},
		{pgtype.TextOID, []byte(""), func() any { return new(string) }},
		{pgtype.TextOID, []byte("raw"), func() any { return new([]byte) }},
		{pgtype.VarcharOID, []byte("path"), func() any { return new(*string) }},
		{pgtype.VarcharOID, nil, func() any { return ptr(ptr("not nil")) }},
		{pgtype.TextOID, nil, func() any { return new([]byte) }},
		{pgtype.ByteaOID, []byte{0, 255}, func() any { return new([]byte) }},
		{pgtype.ByteaOID, []byte{}, func() any { return new([]byte) }},
		{pgtype.ByteaOID, nil, func() any { return new([]byte) }},
		{pgtype.TimestamptzOID, enc(pgtype.TimestamptzOID, time.Date(1969, 12, 31, 23, 59, 59, 999_999_000, time.UTC)), func() any { return new(time.Time) }},
		{pgtype.TimestampOID, enc(pgtype.TimestampOID, time.Date(2026, 11, 28, 4, 9, 53, 123_456_000, time.UTC)), func() any { return new(time.Time) }},
	}
	for _, tt := range tests {
		k := kindOf(tt.oid)
		got, want := tt.dst(), tt.dst()
		if !decode(k, tt.src, got) {
			t.Errorf("%d %q into %T: not decoded", tt.oid, tt.src, got)
			continue
		}
		if err := m.Scan(tt.oid, k.format(), tt.src, want); err != nil {
			t.Fatalf("pgx: %d %q into %T: %v", tt.oid, tt.src, want, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%d %q into %T: %v, pgx %v", tt.oid, tt.src, got, reflect.ValueOf(got).Elem(), reflect.ValueOf(want).Elem())
		}
	}
	// Left to pgx: NULL into a value, out of range, infinity, other types.
	inf := enc(pgtype.TimestamptzOID, pgtype.Timestamptz{InfinityModifier: pgtype.Infinity, Valid: true})
	for _, tt := range []struct {
		k   kind
		src []byte
		dst any
	}{
		{kindInt8, nil, new(int64)},
		{kindText, nil, new(string)},
		{kindInt8, enc(pgtype.Int8OID, int64(math.MaxInt32)+1), new(int32)},
		{kindTimestamptz, inf, new(time.Time)},
		{kindNumeric, []byte("NaN?"), new(float64)},
		{kindInt8, enc(pgtype.Int8OID, int64(1)), new(uint64)},
		{kindInt8, enc(pgtype.Int8OID, int64(1)), new(float64)},
		{kindOther, []byte("2024-02-29"), new(time.Time)},
		{kindInt4, []byte{1, 2}, new(int64)}, // a short value: pgx's error
	} {
		if decode(tt.k, tt.src, tt.dst) {
			t.Errorf("kind %d %q into %T: decoded; pgx should have it", tt.k, tt.src, tt.dst)
		}
	}
}

func ptr[T any](v T) *T { return &v }
