package livemetrics

import "testing"

func TestBindAddress(t *testing.T) {
	for in, want := range map[string]string{"9464": "127.0.0.1:9464", ":9464": "127.0.0.1:9464", "0.0.0.0:9464": "0.0.0.0:9464", "[::1]:0": "[::1]:0"} {
		if got, err := BindAddress(in); err != nil || got != want {
			t.Errorf("BindAddress(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "host:", "x:y:z", "localhost:http-alt-nope"} {
		if got, err := BindAddress(bad); err == nil {
			t.Errorf("BindAddress(%q) = %q, want an error", bad, got)
		}
	}
}
