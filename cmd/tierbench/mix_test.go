package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/testsvc"
)

// A drive whose site answers every search "Sorry" cannot give the bidding
// mix: the result reports each state's share beside the table's, the
// Sorry-backs and session resets, and the mix rule fails the run (exit 1)
// as ECperf's does.
func TestDriveForcedOffTheMixIsInvalid(t *testing.T) {
	t.Parallel()
	bin := testsvc.Binary(t)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/PHP/SearchItemsBy") {
			io.WriteString(w, "<html><h2>Sorry, but there are no items available in this category !</h2></html>")
			return
		}
		io.WriteString(w, `<html><a href="/PHP/ViewItem.php?itemId=7">item</a> <a href="/PHP/ViewUserInfo.php?userId=3">user</a></html>`)
	}))
	defer site.Close()
	out := filepath.Join(t.TempDir(), "drive.json")
	drive := testsvc.Start(t, bin, "drive", "rubis", "--target", site.URL, "--clients", "4", "--iterations", "300",
		"--think-scale", "0", "--out", out)
	code, err := drive.Wait(2 * time.Minute)
	if err != nil || code != 1 {
		t.Fatalf("drive exited %d (%v), want 1: %s\n%s", code, err, drive.Stdout(), drive.Stderr())
	}
	r, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	m := r.Mix
	if m == nil || !m.Judged || m.SorryBacks == 0 || m.SessionResets == 0 || len(m.States) != 27 {
		t.Fatalf("mix %+v", m)
	}
	if r.Validity == nil || r.Validity.Passed || r.Validity.MixPassed || r.Summary.Passed {
		t.Fatalf("validity %+v, passed %v; want the mix rule failed", r.Validity, r.Summary.Passed)
	}
	for _, want := range []string{"INVALID (mix: every state within 1 point", "Sorry-backs", "session resets"} {
		if !strings.Contains(drive.Stdout()+drive.Stderr(), want) {
			t.Errorf("output lacks %q:\n%s\n%s", want, drive.Stdout(), drive.Stderr())
		}
	}
}
