// Package failpoint lets fault tests stop tierbench at a named point of
// its work: a test starts tierbench as a child process with
// TIERBENCH_FAILPOINT=NAME=ACTION[,NAME=ACTION…] and then kills or signals
// it exactly there, instead of guessing the moment with sleeps.
//
// Actions: print (write "failpoint NAME" to stderr and go on), pause (write
// "failpoint NAME: paused" and wait until the context ends: an interrupt),
// hang (write "failpoint NAME: hanging" and block for good, as a call no
// interrupt reaches would), kill (SIGKILL the process at once, as a crash would). Without the
// variable, Hit costs one environment lookup. Nothing but fault tests sets
// it; it depends on nothing of tierbench's.
package failpoint

import (
	"context"
	"fmt"
	"os"
	"strings"
)

// Env is the variable that arms failpoints.
const Env = "TIERBENCH_FAILPOINT"

// Hit runs the action armed for name, if any.
func Hit(ctx context.Context, name string) {
	spec := os.Getenv(Env)
	if spec == "" {
		return
	}
	for _, item := range strings.Split(spec, ",") {
		point, action, _ := strings.Cut(item, "=")
		if point != name {
			continue
		}
		switch action {
		case "print":
			fmt.Fprintf(os.Stderr, "failpoint %s\n", name)
		case "pause":
			fmt.Fprintf(os.Stderr, "failpoint %s: paused\n", name)
			<-ctx.Done()
		case "hang":
			fmt.Fprintf(os.Stderr, "failpoint %s: hanging\n", name)
			select {}
		case "kill":
			fmt.Fprintf(os.Stderr, "failpoint %s: killing the process\n", name)
			p, _ := os.FindProcess(os.Getpid())
			p.Kill()
			select {} // the signal arrives; nothing after this runs
		}
	}
}
