package tpcapp

import (
	"context"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/workload"
)

// frontOverSQLite is a Front over the service on a SQLite file loaded
// with testPopulation.
func frontOverSQLite(t testing.TB) *Front {
	db, _ := loadTestPopulation(t, storetest.SQLite(t), 2, testPopulation, LoadOptions{Images: ImagesNone})
	svc, _ := testService(t, db, 1, 1)
	return NewFront(svc, 2)
}

func post(h http.Handler, path, ctype, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// A malformed envelope gets a SOAP fault, never a crash; so does a method
// that does not exist and a request the method refuses.
func TestSOAPFaults(t *testing.T) {
	f := frontOverSQLite(t)
	env := func(body string) string {
		return `<?xml version="1.0"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body>` + body + `</soap:Body></soap:Envelope>`
	}
	for _, c := range []struct {
		name, ctype, body, kind, code string
	}{
		{"not XML", "text/xml", "<<<", faultRequest, "soap:Client"},
		{"not an envelope", "text/xml", "<hello/>", faultRequest, "soap:Client"},
		{"an empty body", "text/xml", env(""), faultRequest, "soap:Client"},
		{"no such method", "text/xml", env("<tpc:Launch xmlns:tpc='urn:tierbench:tpcapp'/>"), faultRequest, "soap:Client"},
		{"a field of the wrong type", "text/xml", env("<tpc:OrderStatus xmlns:tpc='urn:tierbench:tpcapp'><customer_id>x</customer_id></tpc:OrderStatus>"), faultRequest, "soap:Client"},
		{"a count out of range", "text/xml", env("<tpc:OrderStatus xmlns:tpc='urn:tierbench:tpcapp'><customer_id>1</customer_id><passwd>pwC1</passwd><count>99</count></tpc:OrderStatus>"), faultRequest, "soap:Client"},
		{"a wrong password", "text/xml", env("<tpc:OrderStatus xmlns:tpc='urn:tierbench:tpcapp'><customer_id>1</customer_id><passwd>no</passwd><count>2</count></tpc:OrderStatus>"), faultBusiness, "soap:Client"},
		{"JSON to the SOAP path", "application/json", `{}`, faultRequest, "soap:Client"},
	} {
		rec := post(f, PathSOAP, c.ctype, c.body)
		var ans soapAnswer
		if err := xml.Unmarshal(rec.Body.Bytes(), &ans); err != nil || ans.Body.Fault == nil {
			t.Errorf("%s: %d %s, want a SOAP fault (%v)", c.name, rec.Code, rec.Body, err)
			continue
		}
		if rec.Code != http.StatusInternalServerError || ans.Body.Fault.Kind != c.kind || ans.Body.Fault.Code != c.code {
			t.Errorf("%s: %d, fault %+v; want 500, %s, %s", c.name, rec.Code, *ans.Body.Fault, c.code, c.kind)
		}
	}
	// A good request answers its method's response.
	rec := post(f, PathSOAP, "text/xml", env("<tpc:OrderStatus xmlns:tpc='urn:tierbench:tpcapp'><customer_id>1</customer_id><passwd>pwC1</passwd><count>2</count></tpc:OrderStatus>"))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "<tpc:OrderStatusResponse") {
		t.Errorf("OrderStatus over SOAP: %d %s", rec.Code, rec.Body)
	}
}

func TestJSONErrors(t *testing.T) {
	f := frontOverSQLite(t)
	for _, c := range []struct {
		path, body string
		status     int
		kind       string
	}{
		{PathJSON + "Launch", `{}`, 404, faultRequest},
		{PathJSON + "OrderStatus", `{"customer_id": "x"}`, 400, faultRequest},
		{PathJSON + "OrderStatus", `{"customer_id": 1, "bogus": 1}`, 400, faultRequest},
		{PathJSON + "OrderStatus", `{"customer_id": 1, "passwd": "no", "count": 2}`, 422, faultBusiness},
		{PathJSON + "ChangePaymentMethod", `{"customer_id": 99999999, "payment": {"method": "CC", "card_number": "1"}}`, 404, faultNotFound},
		{"/elsewhere", ``, 404, faultRequest},
	} {
		rec := post(f, c.path, "application/json", c.body)
		if rec.Code != c.status || !strings.Contains(rec.Body.String(), `"kind":"`+c.kind+`"`) {
			t.Errorf("%s %s: %d %s, want %d %s", c.path, c.body, rec.Code, rec.Body, c.status, c.kind)
		}
	}
}

func TestWSDL(t *testing.T) {
	f := frontOverSQLite(t)
	hs := httptest.NewServer(f)
	defer hs.Close()
	resp, err := http.Get(hs.URL + PathSOAP + "?wsdl")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var doc struct {
		PortType struct {
			Operations []struct {
				Name string `xml:"name,attr"`
			} `xml:"operation"`
		} `xml:"portType"`
		Service struct {
			Port struct {
				Address struct {
					Location string `xml:"location,attr"`
				} `xml:"address"`
			} `xml:"port"`
		} `xml:"service"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("the WSDL is not XML: %v\n%s", err, b)
	}
	var names []string
	for _, o := range doc.PortType.Operations {
		names = append(names, o.Name)
	}
	if strings.Join(names, ",") != strings.Join(opNames[:], ",") {
		t.Errorf("operations %v, want %v", names, opNames)
	}
	if doc.Service.Port.Address.Location != hs.URL+PathSOAP {
		t.Errorf("location %q, want %q", doc.Service.Port.Address.Location, hs.URL+PathSOAP)
	}
}

func FuzzFrontSurvivesAnyBody(f *testing.F) {
	f.Add(true, `<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><NewProducts><subject>ARTS</subject><cutoff_minutes>3</cutoff_minutes><limit>5</limit></NewProducts></soap:Body></soap:Envelope>`)
	f.Add(false, `{"subject":"ARTS","cutoff_minutes":3,"limit":5}`)
	f.Add(true, "<a><b></a>")
	f.Add(false, "{")
	front := frontOverSQLite(f)
	f.Fuzz(func(t *testing.T, soap bool, body string) {
		path, ctype := PathJSON+"NewProducts", "application/json"
		if soap {
			path, ctype = PathSOAP, "text/xml"
		}
		rec := post(front, path, ctype, body)
		if rec.Code == http.StatusInternalServerError && !soap {
			t.Fatalf("%q: 500 %s", body, rec.Body)
		}
	})
}

// --mix: spec is the reference's mix; weights name methods, and a method
// not named is never sent; anything else is refused with the names.
func TestParseMix(t *testing.T) {
	spec, err := ParseMix(MixSpec)
	if err != nil || len(spec.Cards) != numOps || spec.Cards[CreateOrder].Count != 50 || spec.Cards[NewCustomer].Count != 1 {
		t.Errorf("spec: %+v, %v", spec, err)
	}
	two, err := ParseMix("OrderStatus=1, ProductDetail=3")
	if err != nil || len(two.Cards) != 2 || two.Cards[0] != (workload.Card{Op: OrderStatus, Count: 1}) || two.Cards[1] != (workload.Card{Op: ProductDetail, Count: 3}) {
		t.Errorf("two methods: %+v, %v", two, err)
	}
	for in, says := range map[string]string{
		"bidding":                     "not METHOD=WEIGHT; methods: NewCustomer",
		"CreateOrder=x":               "want a whole number",
		"CreateOrder=-1":              "want a whole number",
		"CreateOrder=1,CreateOrder=2": "named twice",
		"CreateOrder=0":               "every weight is 0",
		"Checkout=3":                  "not METHOD=WEIGHT",
	} {
		if _, err := ParseMix(in); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("--mix %s: %v, want an error saying %q", in, err, says)
		}
	}
}

// A request whose server dies under it (an app server of several) is in
// doubt when its method writes, whatever the front; a read is an error,
// and so is a write the service never received (the connection refused).
func TestLostRequestsOfWritesAreInDoubt(t *testing.T) {
	t.Parallel()
	dying := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // the request arrived whole
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close() // and no response left
		}
	}))
	defer dying.Close()
	refusing := httptest.NewServer(http.NotFoundHandler())
	refusing.Close()
	ctx := context.Background()
	for _, front := range Fronts {
		c := NewCaller(dying.URL, front, &http.Client{})
		if _, err := c.CreateOrder(ctx, 0, CreateOrderRequest{}); !errors.Is(err, store.ErrInDoubt) {
			t.Errorf("%s: CreateOrder lost: %v; want in doubt", front, err)
		}
		if _, err := c.ChangeItem(ctx, 0, ChangeItemRequest{}); !errors.Is(err, store.ErrInDoubt) {
			t.Errorf("%s: ChangeItem lost: %v; want in doubt", front, err)
		}
		if _, err := c.OrderStatus(ctx, 0, OrderStatusRequest{}); err == nil || errors.Is(err, store.ErrInDoubt) {
			t.Errorf("%s: OrderStatus lost: %v; want an error, not in doubt", front, err)
		}
		c = NewCaller(refusing.URL, front, &http.Client{})
		if _, err := c.CreateOrder(ctx, 0, CreateOrderRequest{}); err == nil || errors.Is(err, store.ErrInDoubt) {
			t.Errorf("%s: CreateOrder refused: %v; want an error, not in doubt", front, err)
		}
	}
}
