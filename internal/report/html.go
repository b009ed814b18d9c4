package report

import (
	"embed"
	"html/template"
	"io"
	"strconv"
	"strings"
)

//go:embed templates/report.html
var templates embed.FS

// page is one HTML report: sections of notes, tables and charts.
type page struct {
	Title    string
	Notes    []string
	Sections []section
}

type section struct {
	ID, Title string
	Notes     []string
	Tables    []table
	Charts    []chart
	// Picks are charts each behind its name, opened one by one (the
	// operations beyond those one chart can tell apart); PickLabel says
	// so above them.
	Picks     []pick
	PickLabel string
	// Pre is preformatted text (a configuration) behind PreTitle.
	Pre, PreTitle string
}

type pick struct {
	Name  string
	Chart chart
}

type pickView struct {
	Name  string
	Chart chartView
}

var pageTemplate = template.Must(template.New("report.html").Funcs(template.FuncMap{
	"num":    func(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) },
	"add":    func(a, b float64) float64 { return a + b },
	"sub":    func(a, b float64) float64 { return a - b },
	"right":  func(r rect) float64 { return r.X + r.W },
	"bottom": func(r rect) float64 { return r.Y + r.H },
	"center": func(r rect) float64 { return r.X + r.W/2 },
	"middle": func(r rect) float64 { return r.Y + r.H/2 },
	"cellClass": func(s string) template.HTMLAttr {
		switch {
		case s == "passed" || s == "yes":
			return ` class="pass"`
		case strings.HasPrefix(s, "FAILED") || strings.HasPrefix(s, "failed") || strings.HasPrefix(s, "no:") || s == "no":
			return ` class="fail"`
		case len(s) > 0 && !strings.ContainsAny(s[:1], "+-0123456789"):
			return ` class="text"`
		}
		return ""
	},
}).ParseFS(templates, "templates/report.html"))

// pageView is the page with its charts' geometry computed.
type pageView struct {
	Title    string
	Notes    []string
	Sections []sectionView
}

type sectionView struct {
	ID, Title     string
	Notes         []string
	Tables        []table
	Charts        []chartView
	Picks         []pickView
	PickLabel     string
	Pre, PreTitle string
}

func (p *page) write(w io.Writer) error {
	v := pageView{Title: p.Title, Notes: p.Notes}
	for _, s := range p.Sections {
		sv := sectionView{ID: s.ID, Title: s.Title, Notes: s.Notes, Tables: s.Tables, Pre: s.Pre, PreTitle: s.PreTitle, PickLabel: s.PickLabel}
		for i := range s.Charts {
			sv.Charts = append(sv.Charts, s.Charts[i].view())
		}
		for _, p := range s.Picks {
			sv.Picks = append(sv.Picks, pickView{Name: p.Name, Chart: p.Chart.view()})
		}
		v.Sections = append(v.Sections, sv)
	}
	return pageTemplate.Execute(w, v)
}
