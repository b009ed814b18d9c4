package messaging

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// ParseServers reads --broker: one NATS server URL, or several
// comma-separated (the servers of a cluster, any of which the client may
// connect to and fail over to). A URL without a scheme is nats://, as
// nats.go reads it. It returns the URLs with their scheme, or one error
// naming the bad one and what is allowed.
func ParseServers(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("no server URL; want nats://HOST:PORT, or several comma-separated for a cluster")
	}
	var out []string
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		u, err := parseServer(part)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}

func parseServer(s string) (string, error) {
	const want = "want nats://HOST:PORT or tls://HOST:PORT, several comma-separated for a cluster"
	if s == "" {
		return "", fmt.Errorf("an empty URL in the list; %s", want)
	}
	full := s
	if !strings.Contains(s, "://") {
		full = "nats://" + s
	}
	u, err := url.Parse(full)
	if err != nil {
		return "", fmt.Errorf("%q: %v; %s", s, err, want)
	}
	if u.Scheme != "nats" && u.Scheme != "tls" {
		return "", fmt.Errorf("%q: scheme %s; %s", s, u.Scheme, want)
	}
	if u.Path != "" && u.Path != "/" || u.RawQuery != "" {
		return "", fmt.Errorf("%q: a server URL has no path or query; %s", s, want)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		// nats.go's default port, as `nats://host` means to it.
		host, port = u.Hostname(), "4222"
	}
	if host == "" {
		return "", fmt.Errorf("%q: no host; %s", s, want)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return "", fmt.Errorf("%q: port %q; want 1..65535", s, port)
	}
	u.Host = net.JoinHostPort(host, port)
	u.Path = ""
	return u.String(), nil
}

// CheckFlags reports every problem of a workload's --broker and
// --stream-replicas before anything connects: the URLs' form, and the
// replicas' range, more than one needing a cluster (an external broker).
// Whether the cluster has that many servers up only it can say (OpenWith,
// Queue).
func CheckFlags(broker string, streamReplicas int) []error {
	var errs []error
	if broker != "" {
		if _, err := ParseServers(broker); err != nil {
			errs = append(errs, fmt.Errorf("--broker %q: %w (or empty for the embedded server)", broker, err))
		}
	}
	switch {
	case streamReplicas < 0 || streamReplicas > MaxStreamReplicas:
		errs = append(errs, fmt.Errorf("--stream-replicas %d: want 1..%d (0: 1), at most the cluster's servers", streamReplicas, MaxStreamReplicas))
	case streamReplicas > 1 && broker == "":
		errs = append(errs, fmt.Errorf("--stream-replicas %d needs a JetStream cluster of at least %d servers, and the embedded broker is one: give --broker the cluster's URLs, e.g. --broker nats://127.0.0.1:4322,nats://127.0.0.1:4323,nats://127.0.0.1:4324 (deploy/local/nats-cluster up)", streamReplicas, streamReplicas))
	}
	return errs
}
