package ecperf

import (
	"strings"
	"testing"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/container"
)

// Each of ECperf's options is checked by its Validate, the refusal naming
// the flag, the value and what is allowed (these were config's checks).
func TestOptionsValidateNamesFlagAndAllowedValues(t *testing.T) {
	common := config.New("ecperf", New().Info().Defaults)
	if errs := DefaultOptions.Validate(common); len(errs) != 0 {
		t.Fatalf("defaults invalid: %v", errs)
	}
	for _, tc := range []struct {
		name   string
		change func(*Options)
		want   []string
	}{
		{"po dispatch", func(o *Options) { o.PODispatch = "fax" }, []string{`--po-dispatch "fax"`, "sync, poller, queue"}},
		{"po senders", func(o *Options) { o.POSenders = 0 }, []string{"--po-senders 0", "at least 1"}},
		{"broker", func(o *Options) { o.Broker = "http://127.0.0.1:4222" }, []string{"--broker", "nats://HOST:PORT"}},
		{"broker, second of a cluster", func(o *Options) { o.Broker = "nats://127.0.0.1:4322,http://127.0.0.1:4323" }, []string{"--broker", `"http://127.0.0.1:4323": scheme http`}},
		{"stream replicas on the embedded broker", func(o *Options) { o.StreamReplicas = 3 }, []string{"--stream-replicas 3", "embedded broker is one", "--broker"}},
		{"stream replicas beyond JetStream's", func(o *Options) { o.Broker, o.StreamReplicas = "nats://127.0.0.1:4322", 7 }, []string{"--stream-replicas 7", "1..5"}},
		{"receiver syntax", func(o *Options) { o.Receiver = "8100" }, []string{`--receiver "8100"`, "HOST:PORT"}},
		{"receiver wildcard", func(o *Options) { o.Receiver = "0.0.0.0:8100" }, []string{`--receiver "0.0.0.0:8100"`, "not every interface"}},
		{"receiver empty host", func(o *Options) { o.Receiver = ":8100" }, []string{`--receiver ":8100"`, "not every interface"}},
		{"receiver loopback, emulator remote", func(o *Options) { o.Emulator = "http://emu-host:8099" }, []string{`--receiver "127.0.0.1:0" is reachable only from this host`, "emu-host can reach"}},
		{"lead time unit", func(o *Options) { o.LeadTimeUnit = -1 }, []string{"--lead-time-unit", "must not be negative"}},
		{"cycle scale", func(o *Options) { o.CycleScale = 0 }, []string{"--cycle-scale 0", "(0, 100]"}},
		{"price changes", func(o *Options) { o.PriceChangeEvery = -1 }, []string{"--price-change-every -1", "at least 1"}},
	} {
		o := DefaultOptions
		tc.change(&o)
		errs := o.Validate(common)
		if len(errs) != 1 {
			t.Errorf("%s: %d problems %v, want 1", tc.name, len(errs), errs)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(errs[0].Error(), w) {
				t.Errorf("%s: %q does not say %q", tc.name, errs[0], w)
			}
		}
	}
	o := DefaultOptions
	o.Broker, o.StreamReplicas = "nats://127.0.0.1:4322,nats://127.0.0.1:4323,127.0.0.1:4324", 3
	if errs := o.Validate(common); len(errs) != 0 {
		t.Errorf("a cluster's three URLs with --stream-replicas 3: %v, want accepted", errs)
	}
	for _, ok := range []struct{ receiver, emulator string }{
		{"127.0.0.1:0", ""}, {"127.0.0.1:0", "http://127.0.0.1:8099"}, {"localhost:8100", "http://localhost:8099"},
		{"10.0.0.5:8100", "http://emu-host:8099"}, {"driver-host:0", "http://10.0.0.7:8099"},
	} {
		o := DefaultOptions
		o.Receiver, o.Emulator = ok.receiver, ok.emulator
		if errs := o.Validate(common); len(errs) != 0 {
			t.Errorf("--receiver %s with --emulator %q: %v, want accepted", ok.receiver, ok.emulator, errs)
		}
	}
	// --ir is the scale, and --ir 0 given is refused (not given, --scale).
	o, c := DefaultOptions, common
	o.IR = 3
	o.Resolve(&c)
	if c.Scale != 3 || o.Setup(c) != "Ir 3, PO dispatch sync, cycle scale 1" {
		t.Errorf("--ir 3: scale %d, setup %q", c.Scale, o.Setup(c))
	}
}

// Price changes that Item's cache would never see are refused: Item
// under option A without the read-mostly link. With the link, or under
// B, C or D (stale at most the refresh interval), they run.
func TestPriceChangesNeedItemToSeeThem(t *testing.T) {
	o := DefaultOptions
	o.PriceChangeEvery = 5
	for _, tc := range []struct {
		opt    container.CommitOption
		entity []string
		ok     bool
	}{
		{container.OptionC, nil, true},
		{container.OptionD, nil, true},
		{container.OptionA, nil, false},
		{container.OptionC, []string{"Item.commit-option=A"}, false},
		{container.OptionA, []string{"Item.read-mostly=ItemRW"}, true},
		{container.OptionA, []string{"Item.commit-option=C"}, true},
	} {
		c := config.New("ecperf", New().Info().Defaults)
		c.CommitOption = tc.opt
		for _, e := range tc.entity {
			s, err := container.ParseSetting(e)
			if err != nil {
				t.Fatal(err)
			}
			c.Entity = append(c.Entity, s)
		}
		errs := o.Validate(c)
		if ok := len(errs) == 0; ok != tc.ok {
			t.Errorf("option %s, %v: %v; want accepted %v", tc.opt, tc.entity, errs, tc.ok)
		} else if !ok && !strings.Contains(errs[0].Error(), "--entity Item.read-mostly=ItemRW") {
			t.Errorf("option %s, %v: %q does not name the declaration", tc.opt, tc.entity, errs[0])
		}
	}
}
