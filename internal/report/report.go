package report

import (
	"io"
	"path/filepath"
	"strings"
)

// Input is what one report covers: result files, or one sweep directory.
type Input struct {
	Runs  []*Run
	Sweep *Sweep
}

// Read reads the arguments of tierbench report: one or more result files,
// or one sweep directory. Its refusals are *InputError.
func Read(args []string) (*Input, error) {
	if len(args) == 0 {
		return nil, inputError("name one or more result files (RESULT.json), or one sweep directory")
	}
	for _, a := range args {
		if isDir(a) {
			if len(args) > 1 {
				return nil, inputError("%s is a directory: report one sweep directory alone, or result files, not both", a)
			}
			s, err := ReadSweep(a)
			if err != nil {
				return nil, err
			}
			return &Input{Sweep: s, Runs: s.Runs()}, nil
		}
	}
	in := &Input{}
	for _, a := range args {
		r, err := ReadRun(a)
		if err != nil {
			return nil, err
		}
		in.Runs = append(in.Runs, r)
	}
	return in, nil
}

// DefaultHTML is where the HTML report goes unless told: beside a single
// result (its name with .html), in a sweep's directory (report.html), or
// compare.html in the current directory for several results.
func (in *Input) DefaultHTML() string {
	switch {
	case in.Sweep != nil:
		return filepath.Join(in.Sweep.Dir, "report.html")
	case len(in.Runs) == 1:
		return strings.TrimSuffix(in.Runs[0].Path, ".json") + ".html"
	}
	return "compare.html"
}

// WriteText writes the terminal's report.
func (in *Input) WriteText(w io.Writer) error {
	if in.Sweep != nil {
		writeSweepText(w, in.Sweep)
		return nil
	}
	return WriteText(w, in.Runs)
}

// WriteHTML writes the report as one self-contained page.
func (in *Input) WriteHTML(w io.Writer) error {
	var p *page
	var err error
	switch {
	case in.Sweep != nil:
		p = sweepPage(in.Sweep)
	case len(in.Runs) == 1:
		p, err = singlePage(in.Runs[0])
	default:
		p, err = comparePage(in.Runs)
	}
	if err != nil {
		return err
	}
	return p.write(w)
}

// WriteCSV writes every run's per-second series under dir, one file per
// run named after its result, and returns their paths.
func (in *Input) WriteCSV(dir string) ([]string, error) {
	return writeCSVFiles(dir, in.Runs)
}
