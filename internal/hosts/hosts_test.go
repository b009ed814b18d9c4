package hosts

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/testsvc"
)

// names lists the network namespaces (ip netns list) and the links of
// the namespace the test runs in (ip link), one name a line.
func names(t *testing.T) (netns, links []string) {
	t.Helper()
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			netns = append(netns, f[0])
		}
	}
	out, err = exec.Command("ip", "-o", "link").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(line); len(f) > 1 {
			links = append(links, strings.TrimSuffix(f[1], ":"))
		}
	}
	slices.Sort(netns)
	slices.Sort(links)
	return netns, links
}

// fakePID is a process number no process has (Linux's PIDs stop at
// 2^22), so that the namespaces a test makes are named apart from a
// run's, and apart from the other tests'.
func fakePID(t *testing.T, n int) int { return 1<<22 + os.Getpid()%1000*10 + n }

// listen serves an echo on role's host.
func listen(t *testing.T, p *Plan, role string) string {
	t.Helper()
	var ln net.Listener
	if err := In(p.Path(role), func() (err error) {
		ln, err = net.Listen("tcp", net.JoinHostPort(p.Host(role).Address, "0"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return serve(t, ln, func(c net.Conn) { io.Copy(c, c); c.Close() })
}

// serve hands each connection ln accepts to handle, until the test ends.
func serve(t testing.TB, ln net.Listener, handle func(net.Conn)) string {
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go handle(c)
		}
	}()
	return ln.Addr().String()
}

// reaches says whether from's host gets an echo from addr within 1 s.
func reaches(p *Plan, from, addr string) bool {
	var c net.Conn
	if err := In(p.Path(from), func() (err error) {
		c, err = net.DialTimeout("tcp", addr, time.Second)
		return err
	}); err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("x")); err != nil {
		return false
	}
	b := make([]byte, 1)
	_, err := io.ReadFull(c, b)
	return err == nil && b[0] == 'x'
}

// Up makes a namespace per role and the switch, with the addresses, the
// rate and loopback; the hosts reach each other and nothing else; Cut
// parts two of them and Heal joins them; Down leaves nothing: ip netns
// list and ip link are what they were before.
func TestHostsUpDown(t *testing.T) {
	testsvc.Namespaces(t)
	nsBefore, linksBefore := names(t)
	pid := fakePID(t, 1)
	link, err := ParseLink("100mbit")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Up(context.Background(), pid, []string{DB, Business, Web, Driver}, link)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Down() })
	base := fmt.Sprintf("tierbench-%d-", pid)
	net24 := fmt.Sprintf("10.%d.%d.", (pid>>8)&0xff, pid&0xff)
	if p.Subnet != net24+"0/24" || p.Switch != base+"switch" {
		t.Errorf("subnet %s, switch %s", p.Subnet, p.Switch)
	}
	for i, role := range []string{DB, Business, Web, Driver} {
		h := p.Host(role)
		if h.Namespace != base+role || h.Address != fmt.Sprintf("%s%d", net24, i+2) {
			t.Errorf("host %s: %+v", role, h)
		}
		out, _ := exec.Command("ip", "-n", h.Namespace, "-o", "addr", "show", "dev", "eth0").Output()
		if !strings.Contains(string(out), " "+h.Address+"/24 ") {
			t.Errorf("%s's eth0: %s", role, out)
		}
		for _, end := range [][2]string{{h.Namespace, "eth0"}, {p.Switch, role}} {
			out, _ := exec.Command("tc", "-n", end[0], "qdisc", "show", "dev", end[1]).Output()
			if !strings.Contains(string(out), "qdisc tbf") || !strings.Contains(string(out), "rate 100Mbit") {
				t.Errorf("%s in %s: %s", end[1], end[0], out)
			}
		}
	}
	nsDuring, linksDuring := names(t)
	var want []string
	for _, role := range []string{"switch", DB, Business, Web, Driver} {
		want = append(want, base+role)
	}
	for _, n := range want {
		if !slices.Contains(nsDuring, n) {
			t.Errorf("namespace %s not in ip netns list: %v", n, nsDuring)
		}
	}
	if !slices.Equal(linksDuring, linksBefore) {
		t.Errorf("links of this namespace during the run %v, before %v: the run made some here", linksDuring, linksBefore)
	}

	business, web := listen(t, p, Business), listen(t, p, Web)
	if !reaches(p, Web, business) || !reaches(p, Driver, business) || !reaches(p, Business, web) {
		t.Fatal("the hosts do not reach each other")
	}
	if err := p.Cut(context.Background(), Business, Web); err != nil {
		t.Fatal(err)
	}
	if reaches(p, Web, business) || reaches(p, Business, web) {
		t.Error("web and business reach each other while cut")
	}
	if !reaches(p, Driver, business) || !reaches(p, Driver, web) {
		t.Error("the driver's host lost business or web while those two were cut")
	}
	if err := p.Heal(context.Background(), Business, Web); err != nil {
		t.Fatal(err)
	}
	if !reaches(p, Web, business) {
		t.Error("web does not reach business once healed")
	}

	if err := p.Down(); err != nil {
		t.Fatal(err)
	}
	nsAfter, linksAfter := names(t)
	for _, n := range nsAfter {
		if strings.HasPrefix(n, base) {
			t.Errorf("namespace %s left after Down", n)
		}
	}
	if !slices.Equal(nsAfter, nsBefore) {
		t.Logf("ip netns list before %v, after %v (other processes' namespaces may come and go)", nsBefore, nsAfter)
	}
	if !slices.Equal(linksAfter, linksBefore) {
		t.Errorf("links after Down %v, before %v", linksAfter, linksBefore)
	}
}

// An Up that fails half way removes what it made, and only that: here the
// web host's namespace exists already (made by the test), so Up stops
// there and removes the switch, db and business namespaces it made.
func TestHostsUpFailsRemovesWhatItMade(t *testing.T) {
	testsvc.Namespaces(t)
	pid := fakePID(t, 2)
	base := fmt.Sprintf("tierbench-%d-", pid)
	if out, err := exec.Command("ip", "netns", "add", base+Web).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "delete", base+Web).Run() })
	_, err := Up(context.Background(), pid, []string{DB, Business, Web, Driver}, Link{Rate: 10e6})
	if err == nil || !strings.Contains(err.Error(), "ip netns add "+base+Web) {
		t.Fatalf("Up over an existing namespace: %v, want the failing step named", err)
	}
	left, _ := names(t)
	var ours []string
	for _, n := range left {
		if strings.HasPrefix(n, base) {
			ours = append(ours, n)
		}
	}
	if !slices.Equal(ours, []string{base + Web}) {
		t.Errorf("namespaces left %v, want only the test's own %s", ours, base+Web)
	}
}

func TestHostsParseLink(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in    string
		rate  int64
		delay time.Duration
		err   string
	}{
		{in: "100mbit", rate: 100e6},
		{in: "100Mbit,0.5ms", rate: 100e6, delay: 500 * time.Microsecond},
		{in: "1gbit, 2ms", rate: 1e9, delay: 2 * time.Millisecond},
		{in: "1.5mbit", rate: 1.5e6},
		{in: "512kbit", rate: 512e3},
		{in: "100", err: `rate "100" has no unit`},
		{in: "100mb", err: `rate "100mb" has no unit`},
		{in: "fastmbit", err: `not a positive number of mbit/s`},
		{in: "0mbit", err: `not a positive number`},
		{in: "1bit", err: "out of range"},
		{in: "100mbit,soon", err: `delay "soon" is not a duration`},
		{in: "100mbit,0ms", err: "delay 0s out of range"},
		{in: "100mbit,2s", err: "delay 2s out of range"},
		{in: "", err: "no rate"},
	} {
		l, err := ParseLink(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "want RATE[,DELAY]") {
				t.Errorf("ParseLink(%q) = %+v, %v; want an error with %q and the syntax", tc.in, l, err, tc.err)
			}
			continue
		}
		if err != nil || l.Rate != tc.rate || l.Delay != tc.delay {
			t.Errorf("ParseLink(%q) = %+v, %v; want rate %d delay %v", tc.in, l, err, tc.rate, tc.delay)
		}
	}
	if b := (Link{Rate: 100e6}).Burst(); b != 50000 {
		t.Errorf("burst at 100mbit %d, want 50000 (4 ms)", b)
	}
	if b := (Link{Rate: 1e6}).Burst(); b != 16<<10 {
		t.Errorf("burst at 1mbit %d, want the 16 KiB floor", b)
	}
}
