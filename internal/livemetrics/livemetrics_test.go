package livemetrics

import "testing"

func TestBindAddress(t *testing.T) {
	for in, want := range map[string]string{"9464": "127.0.0.1:9464", ":9464": "127.0.0.1:9464", "0.0.0.0:9464": "0.0.0.0:9464", "[::1]:0": "[::1]:0"} {
		if got, err := bindAddress(in); err != nil || got != want {
			t.Errorf("bindAddress(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "host:", "x:y:z", "localhost:http-alt-nope"} {
		if got, err := bindAddress(bad); err == nil {
			t.Errorf("bindAddress(%q) = %q, want an error", bad, got)
		}
	}
}
