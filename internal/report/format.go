package report

import (
	"math"
	"strconv"
	"strings"
)

// How the pages print numbers for people, one rule per kind (the
// plotted numbers under each chart stay exact, for programs):
//   - a latency: 3 significant digits and its unit (µs, ms or s);
//   - a rate or another measured figure: 3 significant digits, whole
//     from 100 up, with thousands separators;
//   - a count: whole, with thousands separators;
//   - a share: a percentage with one decimal.

// latency prints a latency given in ms.
func latency(msValue float64) string {
	a := math.Abs(msValue)
	switch {
	case math.IsNaN(msValue):
		return "–"
	case a == 0:
		return "0 ms"
	// The unit changes where 3 digits round up to 1000 of it.
	case a < 0.9995:
		return sig3(msValue*1000) + " µs"
	case a < 999.5:
		return sig3(msValue) + " ms"
	}
	return sig3(msValue/1000) + " s"
}

// rate prints a rate or another measured figure.
func rate(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	return sig3(x)
}

// grouped prints a count.
func grouped(n int64) string { return thousands(strconv.FormatInt(n, 10)) }

// share prints a fraction (0..1) as a percentage.
func share(f float64) string {
	if math.IsNaN(f) {
		return "–"
	}
	return strconv.FormatFloat(100*f, 'f', 1, 64) + "%"
}

// sig3 is x to 3 significant digits, whole from 100 up.
func sig3(x float64) string {
	a := math.Abs(x)
	if a >= 99.95 || a == 0 {
		return thousands(strconv.FormatFloat(math.Round(x), 'f', 0, 64))
	}
	digits := 2 - int(math.Floor(math.Log10(a)))
	// 9.996 rounds to 10.0, not 10.00.
	if r := math.Round(a*math.Pow10(digits)) / math.Pow10(digits); r >= math.Pow10(3-digits) {
		digits--
	}
	return strconv.FormatFloat(x, 'f', digits, 64)
}

// thousands puts a comma between each three digits of a number's whole
// part.
func thousands(s string) string {
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	whole, frac, hasFrac := strings.Cut(s, ".")
	var b strings.Builder
	for i, c := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if hasFrac {
		return sign + b.String() + "." + frac
	}
	return sign + b.String()
}
