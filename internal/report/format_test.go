package report

import "testing"

// One rule per kind: latencies to 3 significant digits with their unit,
// rates to 3 significant digits (whole from 100, thousands separated),
// counts whole and thousands separated, shares as percentages.
func TestNumbersForPeople(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ got, want string }{
		{latency(0.0185), "18.5 µs"},
		{latency(0.9996), "1.00 ms"},
		{latency(31.93), "31.9 ms"},
		{latency(41.943039), "41.9 ms"},
		{latency(999.6), "1.00 s"},
		{latency(1234), "1.23 s"},
		{latency(0), "0 ms"},
		{rate(9699.7), "9,700"},
		{rate(99.96), "100"},
		{rate(9.996), "10.0"},
		{rate(0.04567), "0.0457"},
		{rate(-3702.2), "-3,702"},
		{grouped(1234567), "1,234,567"},
		{grouped(-1234), "-1,234"},
		{grouped(999), "999"},
		{share(0.934), "93.4%"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
