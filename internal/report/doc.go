// Package report turns result files into what people read: the text
// summary again, comparisons of runs with confidence intervals, one
// self-contained HTML page with its charts drawn as SVG (no script, no
// network), per-second CSV series, and the figures of a sweep directory.
//
// report reads results (internal/result, internal/metrics, the sweep file
// format of internal/sweep); it must not depend on the runner, the
// driver, the stores or the CLI.
package report
