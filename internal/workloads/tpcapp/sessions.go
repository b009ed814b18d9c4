package tpcapp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/inputfile"
)

// maxSession is the longest business session the specification allows.
const maxSession = 120

// SessionLength is the distribution of a business session's length in
// requests, as its cumulative distribution over 1..len(cdf): an emulated
// business runs that many requests for one customer, then starts a new
// session with another. The specification's table (its Appendix C) is not
// in the reference text; the default, negexp:20, is our choice and a flag
// (docs/tpcapp.md), and a file of the specification's table can be given.
type SessionLength struct {
	spec string
	cdf  []float64
}

// ParseSessionLength reads --session-length: negexp:MEAN, uniform:MIN-MAX,
// fixed:N, or the path of a file whose lines are a length and its
// cumulative probability (tab or space separated; # comments).
func ParseSessionLength(s string) (SessionLength, error) {
	kind, arg, ok := strings.Cut(s, ":")
	bad := func(why string) (SessionLength, error) {
		return SessionLength{}, fmt.Errorf("--session-length %q: %s; want negexp:MEAN, uniform:MIN-MAX, fixed:N (lengths 1..%d) or a file of the cumulative distribution", s, why, maxSession)
	}
	if !ok || (kind != "negexp" && kind != "uniform" && kind != "fixed") {
		return readCDF(s)
	}
	cdf := make([]float64, maxSession)
	switch kind {
	case "negexp":
		mean, err := strconv.ParseFloat(arg, 64)
		if err != nil || !(mean > 0) {
			return bad("the mean is not a number > 0")
		}
		// A negative exponential of the mean, cut to 1..120 and
		// discretized: P(L <= k) ∝ 1 − e^(−k/mean).
		norm := 1 - math.Exp(-maxSession/mean)
		for k := 1; k <= maxSession; k++ {
			cdf[k-1] = (1 - math.Exp(-float64(k)/mean)) / norm
		}
	case "uniform":
		lo, hi, ok := strings.Cut(arg, "-")
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if !ok || err1 != nil || err2 != nil || a < 1 || b < a || b > maxSession {
			return bad(fmt.Sprintf("want 1 <= MIN <= MAX <= %d", maxSession))
		}
		for k := 1; k <= maxSession; k++ {
			cdf[k-1] = math.Min(1, math.Max(0, float64(k-a+1)/float64(b-a+1)))
		}
	case "fixed":
		n, err := strconv.Atoi(arg)
		if err != nil || n < 1 || n > maxSession {
			return bad(fmt.Sprintf("want 1 <= N <= %d", maxSession))
		}
		for k := n; k <= maxSession; k++ {
			cdf[k-1] = 1
		}
	}
	cdf[maxSession-1] = 1
	return SessionLength{spec: s, cdf: cdf}, nil
}

func readCDF(path string) (SessionLength, error) {
	b, err := inputfile.Read(context.Background(), path, "a file of the cumulative distribution", config.MaxFileBytes)
	if errors.Is(err, inputfile.ErrNotRegular) || errors.Is(err, inputfile.ErrTooLarge) {
		return SessionLength{}, fmt.Errorf("--session-length: %w", err)
	}
	if err != nil {
		return SessionLength{}, fmt.Errorf("--session-length %q: neither negexp:MEAN, uniform:MIN-MAX nor fixed:N, and not a readable file of the cumulative distribution: %w", path, err)
	}
	cdf := make([]float64, 0, maxSession)
	sc := bufio.NewScanner(bytes.NewReader(b))
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Fields(text)
		bad := func(why string) (SessionLength, error) {
			return SessionLength{}, fmt.Errorf("--session-length %s line %d: %s (want a length and its cumulative probability, lengths 1, 2, … in order, probabilities rising to 1)", path, line, why)
		}
		if len(fields) != 2 {
			return bad(fmt.Sprintf("%d fields", len(fields)))
		}
		k, err1 := strconv.Atoi(fields[0])
		p, err2 := strconv.ParseFloat(fields[1], 64)
		if err1 != nil || err2 != nil {
			return bad("not a whole number and a number")
		}
		if k != len(cdf)+1 || k > maxSession {
			return bad(fmt.Sprintf("length %d where %d was due (at most %d)", k, len(cdf)+1, maxSession))
		}
		if p < 0 || p > 1.000001 || (len(cdf) > 0 && p < cdf[len(cdf)-1]) {
			return bad(fmt.Sprintf("probability %g falls or leaves [0, 1]", p))
		}
		cdf = append(cdf, p)
	}
	if err := sc.Err(); err != nil {
		return SessionLength{}, fmt.Errorf("--session-length %s: %w", path, err)
	}
	if len(cdf) == 0 || math.Abs(cdf[len(cdf)-1]-1) > 1e-6 {
		return SessionLength{}, fmt.Errorf("--session-length %s: the cumulative probability must reach 1 at the last length", path)
	}
	cdf[len(cdf)-1] = 1
	return SessionLength{spec: path, cdf: cdf}, nil
}

// Draw is one session's length.
func (s SessionLength) Draw(rng *rand.Rand) int {
	u := rng.Float64()
	return 1 + sort.Search(len(s.cdf), func(i int) bool { return s.cdf[i] > u })
}

// Mean is the distribution's mean length.
func (s SessionLength) Mean() float64 {
	mean, prev := 0.0, 0.0
	for i, p := range s.cdf {
		mean += float64(i+1) * (p - prev)
		prev = p
	}
	return mean
}

func (s SessionLength) String() string { return s.spec }
