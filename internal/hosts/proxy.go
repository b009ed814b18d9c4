package hosts

import (
	"net"
	"sync"
	"time"
)

// Proxy is a delaying TCP proxy: each connection it accepts is joined to
// a new one to its target, and every chunk read from either side is
// written to the other delay after it was read, in order, so that the
// delay adds to the link's round trip without limiting its throughput
// (what netem's delay does to a link, which this kernel lacks).
//
// toxiproxy's latency toxic does the same; as a library it brings its
// HTTP API server, Prometheus's client, zerolog, gorilla/mux and tomb.v1
// for these few lines (decision 0027).
type Proxy struct {
	ln    net.Listener
	dial  func() (net.Conn, error)
	delay time.Duration

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// NewProxy serves ln, joining each connection to one dial makes, delay
// each way.
func NewProxy(ln net.Listener, dial func() (net.Conn, error), delay time.Duration) *Proxy {
	p := &Proxy{ln: ln, dial: dial, delay: delay, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	return p
}

// Addr is where the proxy listens.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Close stops accepting, closes every connection and waits for them.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			if !p.track(in) {
				return
			}
			out, err := p.dial()
			if err != nil {
				in.Close()
				return
			}
			if !p.track(out) {
				in.Close()
				return
			}
			var both sync.WaitGroup
			both.Add(2)
			go func() { defer both.Done(); p.pipe(out, in) }()
			go func() { defer both.Done(); p.pipe(in, out) }()
			both.Wait()
			in.Close()
			out.Close()
			p.mu.Lock()
			delete(p.conns, in)
			delete(p.conns, out)
			p.mu.Unlock()
		}()
	}
}

// chunk is what was read, and when.
type chunk struct {
	b    []byte
	read time.Time
}

// pipe copies src to dst, each chunk delay after it was read. The reader
// goes on reading while earlier chunks wait, as bytes in flight on a
// long link do. When src ends, dst's writing half is closed after the
// chunks before it, with the same delay.
func (p *Proxy) pipe(dst, src net.Conn) {
	queue := make(chan chunk, 1024)
	go func() {
		defer close(queue)
		for {
			b := make([]byte, 32<<10)
			n, err := src.Read(b)
			if n > 0 {
				queue <- chunk{b[:n], time.Now()}
			}
			if err != nil {
				queue <- chunk{read: time.Now()} // the end, which crosses too
				return
			}
		}
	}()
	failed := false
	for c := range queue {
		if failed {
			continue // drain, so the reader ends
		}
		time.Sleep(time.Until(c.read.Add(p.delay)))
		if c.b == nil {
			if cw, ok := dst.(interface{ CloseWrite() error }); ok {
				cw.CloseWrite()
			} else {
				dst.Close()
			}
			continue
		}
		if _, err := dst.Write(c.b); err != nil {
			failed = true
			src.Close()
		}
	}
}

// Delay starts a Proxy on role's host, listening on its address at a
// free port, in front of target (an address on that host): its listening
// socket and the connections it makes to target are that host's (In), so
// the proxy adds its delay where the host's traffic enters it.
func (p *Plan) Delay(role, target string) (*Proxy, error) {
	path := p.Path(role)
	var ln net.Listener
	err := In(path, func() (err error) {
		ln, err = net.Listen("tcp", net.JoinHostPort(p.Host(role).Address, "0"))
		return err
	})
	if err != nil {
		return nil, err
	}
	dial := func() (c net.Conn, err error) {
		err = In(path, func() (err error) {
			c, err = net.DialTimeout("tcp", target, 10*time.Second)
			return err
		})
		return c, err
	}
	return NewProxy(ln, dial, p.Link.Delay), nil
}
