package browser

import (
	"strconv"
	"strings"
)

// The original builds its URLs with Java's URLEncoder.encode and
// Float.toString; these give the same text, so a server sees the same
// parameters.

// appendJavaEncoded appends s form-encoded as java.net.URLEncoder does:
// letters, digits and . - * _ kept, space as +, every other byte as %XX
// (upper-case hex) of its UTF-8.
func appendJavaEncoded(dst []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '.', c == '-', c == '*', c == '_':
			dst = append(dst, c)
		case c == ' ':
			dst = append(dst, '+')
		default:
			dst = append(dst, '%', hex[c>>4], hex[c&15])
		}
	}
	return dst
}

// appendJavaFloat appends f as the original's
// convertFloatToStringDatabaseFormat writes it: Float.toString (decimal
// with at least one fractional digit between 10^-3 and 10^7, else
// d.dddE±n), with a + put into positive exponents.
func appendJavaFloat(dst []byte, f float32) []byte {
	a := f
	if a < 0 {
		a = -a
	}
	if a == 0 || (a >= 1e-3 && a < 1e7) {
		start := len(dst)
		dst = strconv.AppendFloat(dst, float64(f), 'f', -1, 32)
		if !strings.Contains(string(dst[start:]), ".") {
			dst = append(dst, '.', '0')
		}
		return dst
	}
	s := strconv.FormatFloat(float64(f), 'E', -1, 32) // 1.2345E+07
	mant, exp, _ := strings.Cut(s, "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	sign := exp[0]
	exp = strings.TrimLeft(exp[1:], "0")
	if exp == "" {
		exp = "0"
	}
	dst = append(dst, mant...)
	dst = append(dst, 'E', sign)
	return append(dst, exp...)
}
