package runner

import (
	"os"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/store"
)

func TestParseStat(t *testing.T) {
	t.Parallel()
	// proc(5): comm may hold spaces and parentheses; fields count from
	// the last ')'. utime 250, stime 50, cutime 100, cstime 0 ticks of
	// 1/100 s: 4 s.
	line := "4242 (postgres: a) b) S 2159 4242 4242 0 -1 4194560 100 0 0 0 250 50 100 0 20 0 1 0 300 1000 200\n"
	st, err := parseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	want := procStat{comm: "postgres: a) b", ppid: 2159, utime: 250, stime: 50, cutime: 100}
	if st != want || st.total() != 4*time.Second {
		t.Errorf("parseStat = %+v (total %v), want %+v (total 4s)", st, st.total(), want)
	}
	for _, bad := range []string{"", "4242 postgres S 1", "4242 (x) S 1 2 3"} {
		if _, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%q): no error", bad)
		}
	}
	// This process's own line parses.
	if st, err := readStat(os.Getpid()); err != nil || st.ppid != os.Getppid() {
		t.Errorf("readStat(self) = %+v, %v; want ppid %d", st, err, os.Getppid())
	}
}

func TestLocalHost(t *testing.T) {
	t.Parallel()
	for dsn, want := range map[string]bool{
		"postgres://root@127.0.0.1:5432/test":             true,
		"postgres://root@localhost/test":                  true,
		"postgres://root@[::1]:5432/test":                 true,
		"postgres://root@h/test?host=/var/run/postgresql": true,
		"mysql://root@127.0.0.1:3306/test":                true,
		"postgres://root@db.example.com:5432/test":        false,
		"mysql://root@10.0.0.7:3306/test":                 false,
	} {
		d, err := store.ParseDSN(dsn)
		if err != nil {
			t.Fatal(err)
		}
		if got := localHost(d); got != want {
			t.Errorf("localHost(%s) = %v, want %v", dsn, got, want)
		}
	}
}
