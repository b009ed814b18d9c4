package messaging

import (
	"slices"
	"strings"
	"testing"
)

func TestParseServers(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in      string
		want    []string
		wantErr string
	}{
		{in: "nats://127.0.0.1:4222", want: []string{"nats://127.0.0.1:4222"}},
		{in: "nats://127.0.0.1:4322,nats://127.0.0.1:4323, nats://127.0.0.1:4324",
			want: []string{"nats://127.0.0.1:4322", "nats://127.0.0.1:4323", "nats://127.0.0.1:4324"}},
		// The form: the scheme on the first URL only.
		{in: "nats://127.0.0.1:4222,127.0.0.1:4223", want: []string{"nats://127.0.0.1:4222", "nats://127.0.0.1:4223"}},
		{in: "tls://broker.example:4222", want: []string{"tls://broker.example:4222"}},
		{in: "nats://broker", want: []string{"nats://broker:4222"}},
		{in: "nats://[::1]:4222", want: []string{"nats://[::1]:4222"}},
		{in: "", wantErr: "no server URL"},
		{in: "nats://a:1,,nats://b:2", wantErr: "an empty URL in the list"},
		{in: "http://127.0.0.1:4222", wantErr: `"http://127.0.0.1:4222": scheme http`},
		{in: "nats://127.0.0.1:0", wantErr: "port \"0\""},
		{in: "nats://127.0.0.1:4222/queue", wantErr: "no path or query"},
		{in: "nats://:4222", wantErr: "no host"},
	} {
		got, err := ParseServers(c.in)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("ParseServers(%q) = %v, %v; want an error saying %q", c.in, got, err, c.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("ParseServers(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}

func TestCheckFlags(t *testing.T) {
	t.Parallel()
	const cluster = "nats://127.0.0.1:4322,nats://127.0.0.1:4323,nats://127.0.0.1:4324"
	for _, c := range []struct {
		broker   string
		replicas int
		want     []string // one substring per error, in order
	}{
		{"", 0, nil},
		{"", 1, nil},
		{cluster, 3, nil},
		{cluster, 5, nil}, // the cluster's size is the server's to say
		{"", 3, []string{"--stream-replicas 3 needs a JetStream cluster of at least 3 servers, and the embedded broker is one"}},
		{cluster, 6, []string{"--stream-replicas 6: want 1..5"}},
		{cluster, -1, []string{"--stream-replicas -1: want 1..5"}},
		{"redis://x:1", 2, []string{`--broker "redis://x:1": "redis://x:1": scheme redis`}},
	} {
		errs := CheckFlags(c.broker, c.replicas)
		if len(errs) != len(c.want) {
			t.Errorf("CheckFlags(%q, %d) = %v; want %d errors", c.broker, c.replicas, errs, len(c.want))
			continue
		}
		for i, err := range errs {
			if !strings.Contains(err.Error(), c.want[i]) {
				t.Errorf("CheckFlags(%q, %d) error %d = %v; want it to say %q", c.broker, c.replicas, i, err, c.want[i])
			}
		}
	}
}
