package report

import (
	"bytes"
	"testing"
	"time"
)

func TestTextReportGolden(t *testing.T) {
	t.Parallel()
	a := &Run{Path: "a.json", Name: "a", Result: twoOps(0).build()}
	var one bytes.Buffer
	if err := WriteText(&one, []*Run{a}); err != nil {
		t.Fatal(err)
	}
	golden(t, "single.golden", one.Bytes())

	slower := twoOps(2 * time.Millisecond).build()
	slower.Config.Clients = 5
	b := &Run{Path: "b.json", Name: "b", Result: slower}
	var two bytes.Buffer
	if err := WriteText(&two, []*Run{a, b}); err != nil {
		t.Fatal(err)
	}
	golden(t, "compare.golden", two.Bytes())
}
