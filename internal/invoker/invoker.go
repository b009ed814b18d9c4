// Package invoker is how a business tier's calls reach its beans' methods
// (--dispatch). Under generated, a call goes through the service's
// generated handler (protoc-gen-go-grpc's), a typed call of the bean's
// method: JOnAS's precompiled container classes. Under reflect, the same
// call finds the method by its name in a table built when the bean is
// registered and calls it with reflect.Value.Call, the request made from
// the method's signature: what JBoss 3's dynamic proxies and invoker did
// with java.lang.reflect.Method.invoke.
//
// invoker depends on grpc's service descriptions and container's Dispatch
// only; the transport (internal/remote) never sees which one runs.
package invoker

import (
	"context"
	"fmt"
	"reflect"

	"google.golang.org/grpc"

	"github.com/tierbench/tierbench/internal/container"
)

// Registrar is r, registering beans to be invoked as d says: r itself
// under generated, a registrar whose services call their beans by
// reflection under reflect.
func Registrar(r grpc.ServiceRegistrar, d container.Dispatch) grpc.ServiceRegistrar {
	if d != container.Reflect {
		return r
	}
	return reflective{r}
}

// reflective registers services whose methods are invoked by reflection.
type reflective struct{ next grpc.ServiceRegistrar }

func (r reflective) RegisterService(sd *grpc.ServiceDesc, impl any) {
	r.next.RegisterService(Reflective(sd, impl), impl)
}

// Reflective is sd with each unary method's handler replaced by one that
// invokes impl's method of that name by reflection. Streams are left as
// they are (no bean of tierbench's streams). A method sd names that impl
// lacks is a programmer error, as grpc's registration treats it.
func Reflective(sd *grpc.ServiceDesc, impl any) *grpc.ServiceDesc {
	table := methodTable(sd, impl)
	out := *sd
	out.Methods = make([]grpc.MethodDesc, len(sd.Methods))
	for i, md := range sd.Methods {
		name := md.MethodName
		full := "/" + sd.ServiceName + "/" + name
		out.Methods[i] = grpc.MethodDesc{MethodName: name,
			Handler: func(srv any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
				return table.invoke(srv, name, full, ctx, dec, ic)
			}}
	}
	return &out
}

// method is a bean method as the table holds it: the function (receiver
// first) and its request's type.
type method struct {
	fn  reflect.Value
	req reflect.Type
}

// table maps a method's name to the method, as JBoss's invoker maps a
// call's method to its java.lang.reflect.Method.
type table map[string]method

var (
	contextType = reflect.TypeFor[context.Context]()
	errorType   = reflect.TypeFor[error]()
)

func methodTable(sd *grpc.ServiceDesc, impl any) table {
	t := reflect.TypeOf(impl)
	out := make(table, len(sd.Methods))
	for _, md := range sd.Methods {
		m, ok := t.MethodByName(md.MethodName)
		ft := m.Type
		if !ok || ft.NumIn() != 3 || ft.In(1) != contextType || ft.In(2).Kind() != reflect.Pointer ||
			ft.NumOut() != 2 || ft.Out(1) != errorType {
			panic(fmt.Sprintf("invoker: %T has no method %s(context.Context, *Request) (*Reply, error) of service %s", impl, md.MethodName, sd.ServiceName))
		}
		out[md.MethodName] = method{fn: m.Func, req: ft.In(2).Elem()}
	}
	return out
}

// invoke answers one call of method name on srv: the request decoded into
// a new value of the method's request type, the method looked up and
// called by reflection, inside the server's interceptors as the generated
// handler would be.
func (t table) invoke(srv any, name, full string, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
	m, ok := t[name]
	if !ok {
		return nil, fmt.Errorf("invoker: no method %s", name)
	}
	in := reflect.New(m.req)
	if err := dec(in.Interface()); err != nil {
		return nil, err
	}
	call := func(ctx context.Context, req any) (any, error) {
		out := m.fn.Call([]reflect.Value{reflect.ValueOf(srv), reflect.ValueOf(ctx), reflect.ValueOf(req)})
		err, _ := out[1].Interface().(error)
		return out[0].Interface(), err
	}
	if ic == nil {
		return call(ctx, in.Interface())
	}
	return ic(ctx, in.Interface(), &grpc.UnaryServerInfo{Server: srv, FullMethod: full}, call)
}
