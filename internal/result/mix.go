package result

import (
	"fmt"
	"io"
	"math"
	"time"

	"github.com/tierbench/tierbench/internal/metrics"
	"github.com/tierbench/tierbench/internal/workload"
)

// Mix is what a Markov-chain workload's clients did against what their
// table gives in the long run (RUBiS): each state's observed share of the
// steady state beside its stationary share, the moves the pages forced,
// and the images fetched beside the pages.
type Mix struct {
	Table  string     `json:"table"`
	States []MixState `json:"states"`
	// Worst is the state farthest from its stationary share, by
	// WorstPoints percentage points (signed: observed − stationary).
	Worst       string  `json:"worst"`
	WorstPoints float64 `json:"worst_points"`
	// TolerancePoints is the validity rule's bound (plus chance, see the
	// rule's detail); Judged is false when the steady state was shorter
	// than a mean session, which a walk started at Home cannot mix over.
	TolerancePoints float64 `json:"tolerance_points"`
	Judged          bool    `json:"judged"`
	// MeanSession is the table's mean requests per session, MeanSessionS
	// its mean length at the run's think time.
	MeanSession  float64 `json:"mean_session_requests"`
	MeanSessionS float64 `json:"mean_session_s"`
	// Over the whole run, ramps included: backs after a "Sorry" page,
	// backs for want of an id on the page, backs that found no history
	// and reset the session to Home, pages sent again after a failed try.
	SorryBacks    int64   `json:"sorry_backs"`
	NoIDBacks     int64   `json:"no_id_backs"`
	SessionResets int64   `json:"session_resets"`
	PageRetries   int64   `json:"page_retries"`
	Images        *Images `json:"images,omitempty"`
	// Warnings say why the mix may not be the table's.
	Warnings []string `json:"warnings,omitempty"`
}

// MixState is one state's share of the steady state's requests (every
// request meant to start in it, failed ones included), in percent.
type MixState struct {
	Name          string  `json:"name"`
	Count         int64   `json:"count"`
	ObservedPct   float64 `json:"observed_pct"`
	StationaryPct float64 `json:"stationary_pct"`
}

// Images are the images the clients fetched beside the pages, over the
// whole run: not interactions, not in the metric.
type Images struct {
	Requests int64   `json:"requests"`
	Failed   int64   `json:"failed"`
	Bytes    int64   `json:"bytes"`
	PerPage  float64 `json:"per_page"`
	MeanMs   float64 `json:"mean_ms"`
	MaxMs    float64 `json:"max_ms"`
}

// buildMix compares the steady state's requests with the walk's table and
// judges the rule: every state within the tolerance, widened by three
// standard deviations of what chance alone gives a share drawn that many
// times (requests of a session are correlated, so a short run can still
// miss by chance).
//
// A steady state with fewer requests per client than a mean session is
// not judged: every browser starts at Home, so such a run measures its
// sessions' beginnings, whatever the system or the site did.
func buildMix(w *workload.WalkReport, snap metrics.Snapshot, window time.Duration, clients int) (*Mix, *workload.Check) {
	m := &Mix{Table: w.Table, TolerancePoints: w.TolerancePoints, MeanSession: round(w.MeanSession, 2),
		SorryBacks: w.SorryBacks, NoIDBacks: w.NoIDBacks, SessionResets: w.Resets, PageRetries: w.Retries}
	session := time.Duration(w.MeanSession * float64(w.SessionThink))
	m.MeanSessionS = round(session.Seconds(), 1)
	var total int64
	for _, o := range snap.Ops {
		total += o.Count() + o.Failed()
	}
	// The worst state is the farthest from its share; the rule fails on
	// the state farthest beyond what it allows (the tolerance and chance).
	var failing string
	var failDev, failAllowed, worstAllowed float64
	excess := math.Inf(-1)
	for i, o := range snap.Ops {
		n := o.Count() + o.Failed()
		st := MixState{Name: o.Name, Count: n}
		p := 0.0
		if i < len(w.Stationary) {
			p = w.Stationary[i]
		}
		st.StationaryPct = round(100*p, 2)
		if total > 0 {
			st.ObservedPct = round(100*float64(n)/float64(total), 2)
		}
		m.States = append(m.States, st)
		dev := st.ObservedPct - 100*p
		allowed := w.TolerancePoints
		if total > 0 {
			allowed += 300 * math.Sqrt(p*(1-p)/float64(total))
		}
		if math.Abs(dev) > math.Abs(m.WorstPoints) || m.Worst == "" {
			m.Worst, m.WorstPoints, worstAllowed = o.Name, round(dev, 2), allowed
		}
		if e := math.Abs(dev) - allowed; e > excess {
			excess, failing, failDev, failAllowed = e, o.Name, dev, allowed
		}
	}
	if w.Images > 0 { // a failed image is one of them
		im := &Images{Requests: w.Images, Failed: w.ImageErrors, Bytes: w.ImageBytes,
			MeanMs: round(w.ImageTime.Seconds()*1000/float64(w.Images), 3), MaxMs: round(w.ImageMax.Seconds()*1000, 3)}
		if w.Pages > 0 {
			im.PerPage = round(float64(w.Images)/float64(w.Pages), 2)
		}
		m.Images = im
	}
	perClient := float64(total) / float64(max(clients, 1))
	short := perClient < w.MeanSession
	if short {
		m.Warnings = append(m.Warnings, fmt.Sprintf("the steady state (%.0f s, %.1f requests per browser) is shorter than a mean session (%.1f requests, about %s at this think time): the browsers start at Home, so the mix is still their sessions' beginning; run longer to judge it",
			window.Seconds(), perClient, w.MeanSession, session.Round(time.Second)))
	}
	if math.Abs(m.WorstPoints) > w.TolerancePoints {
		m.Warnings = append(m.Warnings, w.Causes...)
	}
	if w.TolerancePoints <= 0 || total == 0 {
		return m, nil
	}
	name := fmt.Sprintf("mix: every state within %g point of the table's stationary share", w.TolerancePoints)
	detail := fmt.Sprintf("worst %s %.2f%% against %.2f%% (%+.2f points; allowed %.2f with chance alone at 3σ over %d requests)",
		m.Worst, m.observed(m.Worst), m.stationary(m.Worst), m.WorstPoints, worstAllowed, total)
	if excess > 0 && failing != m.Worst {
		detail += fmt.Sprintf("; beyond its allowance: %s %+.2f points, allowed %.2f", failing, failDev, failAllowed)
	}
	if short {
		return m, &workload.Check{Name: name, Passed: true, Detail: "not judged: the steady state is shorter than a mean session; " + detail}
	}
	m.Judged = true
	return m, &workload.Check{Name: name, Passed: excess <= 0, Detail: detail}
}

func (m *Mix) observed(name string) float64 {
	for _, s := range m.States {
		if s.Name == name {
			return s.ObservedPct
		}
	}
	return 0
}

func (m *Mix) stationary(name string) float64 {
	for _, s := range m.States {
		if s.Name == name {
			return s.StationaryPct
		}
	}
	return 0
}

// writeMix prints the mix's lines: the worst state against the table, the
// forced moves, the images, the warnings.
func writeMix(w io.Writer, m *Mix) {
	if m == nil {
		return
	}
	fmt.Fprintf(w, "mix (%s): worst state %s %.2f%% against the table's stationary %.2f%% (%+.2f points); Sorry-backs %d, backs without an id %d, session resets %d, pages retried %d (whole run)\n",
		m.Table, m.Worst, m.observed(m.Worst), m.stationary(m.Worst), m.WorstPoints, m.SorryBacks, m.NoIDBacks, m.SessionResets, m.PageRetries)
	if im := m.Images; im != nil {
		fmt.Fprintf(w, "images: %d fetched beside the pages (%.2f per page), %d failed, %d B, mean %.3f ms, max %.3f ms (whole run; not interactions, not in the latencies above)\n",
			im.Requests, im.PerPage, im.Failed, im.Bytes, im.MeanMs, im.MaxMs)
	}
	for _, s := range m.Warnings {
		fmt.Fprintln(w, "warning: "+s)
	}
}
