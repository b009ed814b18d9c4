package tpcapp

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"syscall"
	"text/template"

	"github.com/tierbench/tierbench/internal/remote"
	"github.com/tierbench/tierbench/internal/server"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/workload"
)

// Methods are the seven business methods as the emulated businesses call
// them: on the Service in the same process, or over a front (Caller).
// thread is the server thread of an in-process call; a front assigns its
// own.
type Methods interface {
	NewCustomer(ctx context.Context, thread int, r NewCustomerRequest) (NewCustomerResult, error)
	ChangePaymentMethod(ctx context.Context, thread int, r ChangePaymentMethodRequest) (ChangePaymentMethodResult, error)
	CreateOrder(ctx context.Context, thread int, r CreateOrderRequest) (CreateOrderResult, error)
	OrderStatus(ctx context.Context, thread int, r OrderStatusRequest) (OrderStatusResult, error)
	NewProducts(ctx context.Context, thread int, r NewProductsRequest) (NewProductsResult, error)
	ProductDetail(ctx context.Context, thread int, r ProductDetailRequest) (ProductDetailResult, error)
	ChangeItem(ctx context.Context, thread int, r ChangeItemRequest) (ChangeItemResult, error)
}

var _ Methods = (*Service)(nil)

// Fronts: how the web service is spoken (--front).
const (
	FrontSOAP = "soap"
	FrontJSON = "json"
)

// Fronts are the values of --front.
var Fronts = []string{FrontSOAP, FrontJSON}

// The front's paths and names.
const (
	PathSOAP      = "/tpcapp/soap"
	PathJSON      = "/tpcapp/v1/" // + method name
	soapEnvNS     = "http://schemas.xmlsoap.org/soap/envelope/"
	serviceNS     = "urn:tierbench:tpcapp"
	maxRequest    = 1 << 20
	faultBusiness = "business"
	faultRequest  = "request"
	faultNotFound = "not-found"
	faultServer   = "server"
)

// Front is the web service over HTTP: SOAP 1.1 at PathSOAP (its WSDL at
// PathSOAP?wsdl) and JSON at PathJSON+Method, both always served; the
// emulated businesses speak the one --front names. Each request runs on
// one of the server threads; more wait for one.
type Front struct {
	methods Methods
	threads *remote.Threads
	mux     *http.ServeMux
}

// NewFront serves methods on threads server threads.
func NewFront(methods Methods, threads int) *Front {
	f := &Front{methods: methods, threads: remote.NewThreads(max(threads, 1)), mux: http.NewServeMux()}
	f.mux.HandleFunc(PathSOAP, f.serveSOAP)
	f.mux.HandleFunc(PathJSON+"{method}", f.serveJSON)
	f.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSONError(w, http.StatusNotFound, faultRequest, fmt.Sprintf("no resource %s; the service is at %s (SOAP, WSDL at ?wsdl) and %s{method} (JSON)", r.URL.Path, PathSOAP, PathJSON))
	})
	return f
}

func (f *Front) ServeHTTP(w http.ResponseWriter, r *http.Request) { f.mux.ServeHTTP(w, r) }

// call runs method on a server thread: decode fills the request, the
// method's result is returned for encoding.
type call func(ctx context.Context, m Methods, thread int, decode func(any) error) (any, error)

// calls are the methods by name, each decoding its own request type.
var calls = map[string]call{
	"NewCustomer": func(ctx context.Context, m Methods, t int, dec func(any) error) (any, error) {
		var r NewCustomerRequest
		if err := dec(&r); err != nil {
			return nil, err
		}
		return m.NewCustomer(ctx, t, r)
	},
	"ChangePaymentMethod": func(ctx context.Context, m Methods, t int, dec func(any) error) (any, error) {
		var r ChangePaymentMethodRequest
		if err := dec(&r); err != nil {
			return nil, err
		}
		return m.ChangePaymentMethod(ctx, t, r)
	},
	"CreateOrder": func(ctx context.Context, m Methods, t int, dec func(any) error) (any, error) {
		var r CreateOrderRequest
		if err := dec(&r); err != nil {
			return nil, err
		}
		return m.CreateOrder(ctx, t, r)
	},
	"OrderStatus": func(ctx context.Context, m Methods, t int, dec func(any) error) (any, error) {
		var r OrderStatusRequest
		if err := dec(&r); err != nil {
			return nil, err
		}
		return m.OrderStatus(ctx, t, r)
	},
	"NewProducts": func(ctx context.Context, m Methods, t int, dec func(any) error) (any, error) {
		var r NewProductsRequest
		if err := dec(&r); err != nil {
			return nil, err
		}
		return m.NewProducts(ctx, t, r)
	},
	"ProductDetail": func(ctx context.Context, m Methods, t int, dec func(any) error) (any, error) {
		var r ProductDetailRequest
		if err := dec(&r); err != nil {
			return nil, err
		}
		return m.ProductDetail(ctx, t, r)
	},
	"ChangeItem": func(ctx context.Context, m Methods, t int, dec func(any) error) (any, error) {
		var r ChangeItemRequest
		if err := dec(&r); err != nil {
			return nil, err
		}
		return m.ChangeItem(ctx, t, r)
	},
}

// run takes a server thread and runs the call on it.
func (f *Front) run(ctx context.Context, c call, decode func(any) error) (any, error) {
	thread, err := f.threads.Take(ctx)
	if err != nil {
		return nil, err
	}
	defer f.threads.Give(thread)
	return c(ctx, f.methods, thread, decode)
}

// faultOf classifies an error for the wire: the business outcomes the
// driver counts as biz-exc, the requests that are wrong, the rest.
func faultOf(err error) (kind string, status int) {
	var re *RequestError
	switch {
	case workload.IsBusiness(err):
		return faultBusiness, http.StatusUnprocessableEntity
	case errors.As(err, &re):
		return faultRequest, http.StatusBadRequest
	case errors.Is(err, ErrNoCustomer), errors.Is(err, ErrNoItem):
		return faultNotFound, http.StatusNotFound
	}
	return faultServer, http.StatusInternalServerError
}

// jsonError is the JSON front's error body.
type jsonError struct {
	Error string `json:"error"`
	Kind  string `json:"kind"`
}

func writeJSONError(w http.ResponseWriter, status int, kind, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(jsonError{Error: msg, Kind: kind})
}

func (f *Front) serveJSON(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("method")
	c, ok := calls[name]
	if ok {
		server.NameOperation(r, name)
	}
	switch {
	case !ok:
		writeJSONError(w, http.StatusNotFound, faultRequest, fmt.Sprintf("no method %q; the methods: NewCustomer, ChangePaymentMethod, CreateOrder, OrderStatus, NewProducts, ProductDetail, ChangeItem", name))
		return
	case r.Method != http.MethodPost:
		w.Header().Set("Allow", http.MethodPost)
		writeJSONError(w, http.StatusMethodNotAllowed, faultRequest, "want POST with the request as JSON")
		return
	}
	body := http.MaxBytesReader(w, r.Body, maxRequest)
	res, err := f.run(r.Context(), c, func(v any) error {
		dec := json.NewDecoder(body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			return &RequestError{Msg: "request body: " + err.Error()}
		}
		return nil
	})
	if err != nil {
		kind, status := faultOf(err)
		writeJSONError(w, status, kind, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(res)
}

// soapRequest is an envelope as the front reads it: the body's first
// element names the method.
type soapRequest struct {
	XMLName xml.Name `xml:"http://schemas.xmlsoap.org/soap/envelope/ Envelope"`
	Body    struct {
		Inner []byte `xml:",innerxml"`
	} `xml:"http://schemas.xmlsoap.org/soap/envelope/ Body"`
}

// soapFault is a SOAP 1.1 fault; detail says which kind for clients that
// tell business outcomes from failures.
type soapFault struct {
	XMLName xml.Name `xml:"soap:Fault"`
	Code    string   `xml:"faultcode"`
	String  string   `xml:"faultstring"`
	Kind    string   `xml:"detail>kind"`
}

func writeSOAP(w http.ResponseWriter, status int, element string, v any) {
	var buf bytes.Buffer
	buf.WriteString(xml.Header + `<soap:Envelope xmlns:soap="` + soapEnvNS + `"><soap:Body>`)
	enc := xml.NewEncoder(&buf)
	var err error
	if element == "" {
		err = enc.Encode(v)
	} else {
		err = enc.EncodeElement(v, xml.StartElement{Name: xml.Name{Local: "tpc:" + element}, Attr: []xml.Attr{{Name: xml.Name{Local: "xmlns:tpc"}, Value: serviceNS}}})
	}
	if err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(xml.Header + `<soap:Envelope xmlns:soap="` + soapEnvNS + `"><soap:Body>`)
		xml.NewEncoder(&buf).Encode(soapFault{Code: "soap:Server", String: "encode the answer: " + err.Error(), Kind: faultServer})
	}
	buf.WriteString(`</soap:Body></soap:Envelope>`)
	w.Header().Set("Content-Type", "text/xml; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

func writeFault(w http.ResponseWriter, kind, msg string) {
	code := "soap:Server"
	if kind != faultServer {
		code = "soap:Client"
	}
	// SOAP 1.1 answers every fault with 500 (section 6.2).
	writeSOAP(w, http.StatusInternalServerError, "", soapFault{Code: code, String: msg, Kind: kind})
}

func (f *Front) serveSOAP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.URL.Query().Has("wsdl") {
		f.serveWSDL(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeFault(w, faultRequest, "want POST with a SOAP envelope, or GET "+PathSOAP+"?wsdl")
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || (mt != "text/xml" && mt != "application/soap+xml") {
			writeFault(w, faultRequest, fmt.Sprintf("content type %q: want text/xml", ct))
			return
		}
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequest))
	if err != nil {
		writeFault(w, faultRequest, "read the envelope: "+err.Error())
		return
	}
	var env soapRequest
	if err := xml.Unmarshal(data, &env); err != nil {
		writeFault(w, faultRequest, "not a SOAP 1.1 envelope: "+err.Error())
		return
	}
	dec := xml.NewDecoder(bytes.NewReader(env.Body.Inner))
	var start *xml.StartElement
	for start == nil {
		tok, err := dec.Token()
		if err != nil {
			writeFault(w, faultRequest, "the SOAP body names no method")
			return
		}
		if se, ok := tok.(xml.StartElement); ok {
			start = &se
		}
	}
	name := start.Name.Local
	c, ok := calls[name]
	if !ok {
		writeFault(w, faultRequest, fmt.Sprintf("no method %q", name))
		return
	}
	server.NameOperation(r, name)
	res, err := f.run(r.Context(), c, func(v any) error {
		if err := dec.DecodeElement(v, start); err != nil {
			return &RequestError{Msg: name + ": " + err.Error()}
		}
		return nil
	})
	if err != nil {
		kind, _ := faultOf(err)
		writeFault(w, kind, err.Error())
		return
	}
	writeSOAP(w, http.StatusOK, name+"Response", res)
}

//go:embed tpcapp.wsdl
var wsdlText string

var wsdl = template.Must(template.New("wsdl").Parse(wsdlText))

// serveWSDL describes the service, its address the one the request came
// to.
func (f *Front) serveWSDL(w http.ResponseWriter, r *http.Request) {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	// The Host header is the client's: escaped, it cannot break the XML.
	var loc bytes.Buffer
	xml.EscapeText(&loc, []byte(scheme+"://"+r.Host+PathSOAP))
	var buf bytes.Buffer
	if err := wsdl.Execute(&buf, struct{ Location, NS string }{Location: loc.String(), NS: serviceNS}); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/xml; charset=utf-8")
	w.Write(buf.Bytes())
}

// Caller calls a front over HTTP, speaking SOAP or JSON. It is safe for
// concurrent use.
type Caller struct {
	base  string
	front string
	hc    *http.Client
}

var _ Methods = (*Caller)(nil)

// NewCaller calls the front at base (scheme://host[:port]) in front's
// protocol.
func NewCaller(base, front string, hc *http.Client) *Caller {
	return &Caller{base: strings.TrimSuffix(base, "/"), front: front, hc: hc}
}

// FrontError is an answer that was not a result.
type FrontError struct {
	Kind, Msg string
	Status    int
}

func (e *FrontError) Error() string { return e.Msg }

// HTTPStatus lets a result count the failure under the status it came
// with (none below 400: a fault in a 200 answer is counted as other).
func (e *FrontError) HTTPStatus() int { return e.Status }

// Is lets errors.Is find the kinds the driver and the callers tell apart.
func (e *FrontError) Is(target error) bool {
	switch e.Kind {
	case faultNotFound:
		return target == ErrNotFound
	}
	return false
}

// ErrNotFound: the front found no such customer or item.
var ErrNotFound = errors.New("not found")

// fail turns a front's error answer into the error the method would have
// returned in-process: a business outcome stays one.
func fail(kind, msg string, status int) error {
	switch kind {
	case faultBusiness:
		return workload.Business(msg)
	case faultRequest:
		return &RequestError{Msg: msg}
	}
	return &FrontError{Kind: kind, Msg: msg, Status: status}
}

// writes are the methods that write.
var writes = map[string]bool{"NewCustomer": true, "ChangePaymentMethod": true, "CreateOrder": true, "ChangeItem": true}

// lost is a request of method that got no response (its server died
// under it, an app server of several): one that writes may or may not
// have committed, unless it never reached the service.
func lost(method string, err error) error {
	if !writes[method] || errors.Is(err, syscall.ECONNREFUSED) {
		return err
	}
	return fmt.Errorf("%w: %w", store.ErrInDoubt, err)
}

func (c *Caller) invoke(ctx context.Context, method string, req, res any) error {
	if c.front == FrontJSON {
		return c.invokeJSON(ctx, method, req, res)
	}
	return c.invokeSOAP(ctx, method, req, res)
}

func (c *Caller) invokeJSON(ctx context.Context, method string, req, res any) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+PathJSON+method, bytes.NewReader(b))
	if err != nil {
		return err
	}
	hr.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(hr)
	if err != nil {
		return lost(method, err)
	}
	defer drain(resp)
	if resp.StatusCode != http.StatusOK {
		var e jsonError
		if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || e.Kind == "" {
			return &FrontError{Kind: faultServer, Msg: fmt.Sprintf("%s: %s", method, resp.Status), Status: resp.StatusCode}
		}
		return fail(e.Kind, e.Error, resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(res)
}

// soapAnswer is a response envelope as the caller reads it: the result or
// a fault.
type soapAnswer struct {
	Body struct {
		Fault *struct {
			Code   string `xml:"faultcode"`
			String string `xml:"faultstring"`
			Kind   string `xml:"detail>kind"`
		} `xml:"Fault"`
		Inner []byte `xml:",innerxml"`
	} `xml:"Body"`
}

func (c *Caller) invokeSOAP(ctx context.Context, method string, req, res any) error {
	var buf bytes.Buffer
	buf.WriteString(xml.Header + `<soap:Envelope xmlns:soap="` + soapEnvNS + `"><soap:Body>`)
	if err := xml.NewEncoder(&buf).EncodeElement(req, xml.StartElement{Name: xml.Name{Local: "tpc:" + method},
		Attr: []xml.Attr{{Name: xml.Name{Local: "xmlns:tpc"}, Value: serviceNS}}}); err != nil {
		return err
	}
	buf.WriteString(`</soap:Body></soap:Envelope>`)
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+PathSOAP, &buf)
	if err != nil {
		return err
	}
	hr.Header.Set("Content-Type", "text/xml; charset=utf-8")
	hr.Header.Set("SOAPAction", `"`+serviceNS+"#"+method+`"`)
	resp, err := c.hc.Do(hr)
	if err != nil {
		return lost(method, err)
	}
	defer drain(resp)
	var ans soapAnswer
	if err := xml.NewDecoder(resp.Body).Decode(&ans); err != nil {
		return &FrontError{Kind: faultServer, Msg: fmt.Sprintf("%s: %s, not a SOAP envelope: %v", method, resp.Status, err), Status: resp.StatusCode}
	}
	if f := ans.Body.Fault; f != nil {
		return fail(f.Kind, f.String, resp.StatusCode)
	}
	dec := xml.NewDecoder(bytes.NewReader(ans.Body.Inner))
	for {
		tok, err := dec.Token()
		if err != nil {
			return &FrontError{Kind: faultServer, Msg: method + ": an empty SOAP body", Status: resp.StatusCode}
		}
		if se, ok := tok.(xml.StartElement); ok {
			return dec.DecodeElement(res, &se)
		}
	}
}

func drain(resp *http.Response) {
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

func (c *Caller) NewCustomer(ctx context.Context, _ int, r NewCustomerRequest) (res NewCustomerResult, err error) {
	err = c.invoke(ctx, "NewCustomer", r, &res)
	return
}

func (c *Caller) ChangePaymentMethod(ctx context.Context, _ int, r ChangePaymentMethodRequest) (res ChangePaymentMethodResult, err error) {
	err = c.invoke(ctx, "ChangePaymentMethod", r, &res)
	return
}

func (c *Caller) CreateOrder(ctx context.Context, _ int, r CreateOrderRequest) (res CreateOrderResult, err error) {
	err = c.invoke(ctx, "CreateOrder", r, &res)
	return
}

func (c *Caller) OrderStatus(ctx context.Context, _ int, r OrderStatusRequest) (res OrderStatusResult, err error) {
	err = c.invoke(ctx, "OrderStatus", r, &res)
	return
}

func (c *Caller) NewProducts(ctx context.Context, _ int, r NewProductsRequest) (res NewProductsResult, err error) {
	err = c.invoke(ctx, "NewProducts", r, &res)
	return
}

func (c *Caller) ProductDetail(ctx context.Context, _ int, r ProductDetailRequest) (res ProductDetailResult, err error) {
	err = c.invoke(ctx, "ProductDetail", r, &res)
	return
}

func (c *Caller) ChangeItem(ctx context.Context, _ int, r ChangeItemRequest) (res ChangeItemResult, err error) {
	err = c.invoke(ctx, "ChangeItem", r, &res)
	return
}
