package testsvc

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"
)

// DefaultRedis is the development machines' Redis.
const DefaultRedis = "redis://127.0.0.1:6379"

// Redis returns the URL of the shared Redis (TIERBENCH_TEST_REDIS, or
// DefaultRedis) after a PING, and a run name of the test's own, which
// prefixes every key it writes so that tests and sessions sharing the
// server never meet. An unreachable server skips the test (fails it under
// TIERBENCH_REQUIRE_SERVICES=1). The server is shared: never flush it.
func Redis(t testing.TB) (rawURL, run string) {
	t.Helper()
	rawURL = strings.TrimSpace(os.Getenv("TIERBENCH_TEST_REDIS"))
	if rawURL == "" {
		rawURL = DefaultRedis
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		t.Fatalf("TIERBENCH_TEST_REDIS=%q: give redis://HOST:PORT", rawURL)
	}
	if err := ping(u.Host); err != nil {
		unavailable(t, "Redis at %s unreachable (%v); set TIERBENCH_TEST_REDIS", u.Redacted(), err)
	}
	b := make([]byte, 6)
	rand.Read(b)
	return rawURL, "test-" + hex.EncodeToString(b)
}

// ping sends a PING in Redis's inline protocol and reads the +PONG.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, probeTimeout)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(probeTimeout))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("PING answered %q, not +PONG", strings.TrimSpace(line))
	}
	return nil
}
