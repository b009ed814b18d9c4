package hosts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// The roles a host can have. A role's name is also its namespace's last
// part and its port's name on the switch.
const (
	DB       = "db"
	Business = "business"
	Web      = "web"
	Driver   = "driver"
)

// EnvPlan carries a plan, as JSON, to the run re-executed on the driver's
// host (cli): the namespaces are the parent's to make and remove.
const EnvPlan = "TIERBENCH_HOSTS_PLAN"

// prefix begins every namespace a run makes: tierbench-PID-ROLE.
const prefix = "tierbench-"

// Host is one host of a run: its namespace and address, and what ran
// there (filled in by the run that uses it).
type Host struct {
	Role      string   `json:"role"`
	Namespace string   `json:"namespace"`
	Address   string   `json:"address"`
	Runs      []string `json:"runs,omitempty"`
}

// Plan is a run's network: its hosts on one switch, and the link between
// each host and the switch.
type Plan struct {
	// Switch is the namespace of the bridge every host's veth ends on.
	Switch string `json:"switch"`
	// Subnet holds every host's address: a /24 of 10.0.0.0/8 named after
	// the run's PID, private to the run's namespaces.
	Subnet string `json:"subnet"`
	Hosts  []Host `json:"hosts"`
	Link   Link   `json:"link"`
}

// Host is the host with role; a zero Host when the plan has none.
func (p *Plan) Host(role string) Host {
	for _, h := range p.Hosts {
		if h.Role == role {
			return h
		}
	}
	return Host{}
}

// Exec is argv run on role's host: `ip netns exec NAMESPACE argv…`. ip
// enters the namespace and executes argv in its own place, so the process
// started is argv's, with ip's PID.
func (p *Plan) Exec(role string, argv ...string) []string {
	return append([]string{"ip", "netns", "exec", p.Host(role).Namespace}, argv...)
}

// Path is the file that names role's namespace, for setns.
func (p *Plan) Path(role string) string {
	return "/var/run/netns/" + p.Host(role).Namespace
}

// Env is the plan as EnvPlan's value.
func (p *Plan) Env() string {
	b, _ := json.Marshal(p)
	return EnvPlan + "=" + string(b)
}

// FromEnv is the plan a parent run passed in EnvPlan, or nil.
func FromEnv() (*Plan, error) {
	v := os.Getenv(EnvPlan)
	if v == "" {
		return nil, nil
	}
	var p Plan
	if err := json.Unmarshal([]byte(v), &p); err != nil {
		return nil, fmt.Errorf("%s: %w", EnvPlan, err)
	}
	return &p, nil
}

// Check says whether hosts can be made here: root, and iproute2's ip and
// tc on PATH.
func Check() error {
	if os.Geteuid() != 0 {
		return errors.New("--placement hosts makes network namespaces and needs root")
	}
	for _, prog := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(prog); err != nil {
			return fmt.Errorf("--placement hosts needs iproute2's %s (Debian: apt-get install iproute2): %w", prog, err)
		}
	}
	return nil
}

// Subnet is the /24 a run of process pid uses: 10.A.B.0/24 with A.B the
// PID's low 16 bits. The namespaces keep it from the machine's routes and
// from other runs'; naming it after the PID makes each run's distinct in
// what it records.
func Subnet(pid int) string {
	return fmt.Sprintf("10.%d.%d.0/24", (pid>>8)&0xff, pid&0xff)
}

// Up makes the hosts of roles for the process pid (os.Getpid()), each on
// link: the switch's namespace and bridge, a namespace per role with
// loopback up and eth0 at the next address of the subnet, tbf on both
// ends of its veth when link has a rate. When a step fails, what Up made
// is removed and the error says which step.
func Up(ctx context.Context, pid int, roles []string, link Link) (*Plan, error) {
	if err := Check(); err != nil {
		return nil, err
	}
	base := fmt.Sprintf("%s%d-", prefix, pid)
	subnet := Subnet(pid)
	net := strings.TrimSuffix(subnet, "0/24")
	p := &Plan{Switch: base + "switch", Subnet: subnet, Link: link}
	made := []string{}
	fail := func(err error) (*Plan, error) {
		return nil, errors.Join(fmt.Errorf("--placement hosts: %w", err), remove(made))
	}
	if err := ip(ctx, "netns", "add", p.Switch); err != nil {
		return fail(err)
	}
	made = append(made, p.Switch)
	for _, step := range [][]string{
		{"-n", p.Switch, "link", "set", "lo", "up"},
		{"-n", p.Switch, "link", "add", "bridge", "type", "bridge"},
		{"-n", p.Switch, "link", "set", "bridge", "up"},
	} {
		if err := ip(ctx, step...); err != nil {
			return fail(err)
		}
	}
	for i, role := range roles {
		h := Host{Role: role, Namespace: base + role, Address: fmt.Sprintf("%s%d", net, i+2)}
		if err := ip(ctx, "netns", "add", h.Namespace); err != nil {
			return fail(err)
		}
		made = append(made, h.Namespace)
		p.Hosts = append(p.Hosts, h)
		steps := [][]string{
			{"-n", h.Namespace, "link", "set", "lo", "up"},
			// Both ends are made where they live: nothing of the run
			// ever appears in the namespace tierbench started in.
			{"link", "add", "eth0", "netns", h.Namespace, "type", "veth", "peer", "name", role, "netns", p.Switch},
			{"-n", h.Namespace, "addr", "add", h.Address + "/24", "dev", "eth0"},
			{"-n", h.Namespace, "link", "set", "dev", "eth0", "up"},
			{"-n", p.Switch, "link", "set", "dev", role, "master", "bridge", "up"},
		}
		for _, step := range steps {
			if err := ip(ctx, step...); err != nil {
				return fail(err)
			}
		}
		if link.Rate > 0 {
			for _, end := range [][2]string{{h.Namespace, "eth0"}, {p.Switch, role}} {
				if err := tc(ctx, append([]string{"-n", end[0], "qdisc", "add", "dev", end[1], "root"}, link.tbf()...)...); err != nil {
					return fail(err)
				}
			}
		}
	}
	return p, nil
}

// Down removes the plan's namespaces, and with them their veths and the
// switch's bridge. A namespace that is gone already is not an error.
func (p *Plan) Down() error {
	names := []string{p.Switch}
	for _, h := range p.Hosts {
		names = append(names, h.Namespace)
	}
	return remove(names)
}

// remove deletes the namespaces names, the last made first.
func remove(names []string) error {
	var errs []error
	for i := len(names) - 1; i >= 0; i-- {
		if _, err := os.Stat("/var/run/netns/" + names[i]); errors.Is(err, os.ErrNotExist) {
			continue
		}
		// Not the run's context: an interrupted run removes them too.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		errs = append(errs, ip(ctx, "netns", "delete", names[i]))
		cancel()
	}
	return errors.Join(errs...)
}

// Cut parts the hosts a and b: their ports on the switch become isolated
// (a bridge forwards nothing between two isolated ports), so neither
// reaches the other while both still reach every other host. Heal joins
// them again. Linux's bridge port isolation needs no packet filter, which
// this kernel lacks (no iptables, no tc classifier).
func (p *Plan) Cut(ctx context.Context, a, b string) error {
	return p.isolate(ctx, "on", a, b)
}

// Heal undoes Cut.
func (p *Plan) Heal(ctx context.Context, a, b string) error {
	return p.isolate(ctx, "off", a, b)
}

func (p *Plan) isolate(ctx context.Context, state string, roles ...string) error {
	for _, role := range roles {
		if p.Host(role).Namespace == "" {
			return fmt.Errorf("no %s host in this run", role)
		}
		if out, err := exec.CommandContext(ctx, "bridge", "-n", p.Switch, "link", "set", "dev", role, "isolated", state).CombinedOutput(); err != nil {
			return fmt.Errorf("bridge -n %s link set dev %s isolated %s: %v: %s", p.Switch, role, state, err, bytes.TrimSpace(out))
		}
	}
	return nil
}

func ip(ctx context.Context, args ...string) error { return run(ctx, "ip", args) }
func tc(ctx context.Context, args ...string) error { return run(ctx, "tc", args) }

func run(ctx context.Context, prog string, args []string) error {
	out, err := exec.CommandContext(ctx, prog, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", prog, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}
