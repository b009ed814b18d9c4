package livemetrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/tierbench/tierbench/internal/server"
)

// A tier whose one endpoint serves several methods names each request's
// method (server.NameOperation); its routes name the rest, and a path no
// route matches is "other". Real requests to a real server, counted
// exactly.
func TestHandlerNamesOperations(t *testing.T) {
	live, err := Listen("127.0.0.1:0", "tpcapp", "")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	methods := map[string]bool{"NewCustomer": true, "OrderStatus": true}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /soap", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if name := string(body); methods[name] {
			server.NameOperation(r, name)
			return
		}
		http.Error(w, "no such method", http.StatusBadRequest)
	})
	mux.HandleFunc("GET /about", func(http.ResponseWriter, *http.Request) {})
	tier := httptest.NewServer(live.Handler(TierSite, mux))
	defer tier.Close()
	send := func(method, path, body string) {
		t.Helper()
		req, _ := http.NewRequest(method, tier.URL+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	for range 3 {
		send("POST", "/soap", "NewCustomer")
	}
	send("POST", "/soap", "OrderStatus")
	send("POST", "/soap", "DropTables") // a client's text is never a label
	send("GET", "/about", "")
	send("GET", "/about", "")
	send("GET", "/etc/passwd", "")

	resp, err := http.Get(live.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, m := range fams["tierbench_served_requests_total"].GetMetric() {
		l := map[string]string{}
		for _, p := range m.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		got[l["workload"]+" "+l["tier"]+" "+l["operation"]+" "+l["outcome"]+" "+l["code"]] = m.GetCounter().GetValue()
	}
	want := map[string]float64{
		"tpcapp site NewCustomer success 200": 3,
		"tpcapp site OrderStatus success 200": 1,
		"tpcapp site POST /soap error 400":    1,
		"tpcapp site GET /about success 200":  2,
		"tpcapp site other error 404":         1,
	}
	if len(got) != len(want) {
		t.Errorf("series %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %v requests, want %v (all: %v)", k, got[k], v, got)
		}
	}
}
