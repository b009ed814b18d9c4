package placement

import (
	"fmt"
	"regexp"
	"strings"
)

// settingName is a PostgreSQL parameter's name: letters, digits and
// underscores, or a custom class's "class.name".
var settingName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$`)

// ParseSetting reads NAME=VALUE, a server setting as --pg-setting gives it.
// Only its shape is checked here: whether PostgreSQL knows the name and
// takes the value is the server's to say when it starts.
func ParseSetting(kv string) (name, value string, err error) {
	name, value, ok := strings.Cut(kv, "=")
	switch {
	case !ok:
		return "", "", fmt.Errorf("--pg-setting %q: want NAME=VALUE, a PostgreSQL server parameter such as shared_buffers=256MB or fsync=off", kv)
	case !settingName.MatchString(name):
		return "", "", fmt.Errorf("--pg-setting %q: %q is not a parameter name (letters, digits and underscores, such as work_mem)", kv, name)
	case value == "":
		return "", "", fmt.Errorf("--pg-setting %q: no value; want NAME=VALUE such as %s=…", kv, name)
	}
	return name, value, nil
}

// ErrSetting is a server start that PostgreSQL refused for a setting
// given to it: an unknown parameter, a value out of range, a parameter
// that cannot be set at start.
type ErrSetting struct {
	Settings []string
	// Message is PostgreSQL's own, from its log.
	Message string
}

func (e *ErrSetting) Error() string {
	return fmt.Sprintf("--pg-setting: the private PostgreSQL server refused to start with %s: %s", strings.Join(e.Settings, " "), e.Message)
}

// refusedSetting finds, in the end of a server's log, the message with
// which PostgreSQL refuses a parameter ("invalid value for parameter …",
// "unrecognized configuration parameter …"); empty when there is none.
func refusedSetting(log string) string {
	for _, line := range strings.Split(log, "\n") {
		line = strings.TrimSpace(line)
		for _, m := range []string{"invalid value for parameter", "unrecognized configuration parameter", "parameter \"", "is outside the valid range", "cannot be changed"} {
			if strings.Contains(line, m) {
				// "2026-… FATAL:  invalid value…" → from the severity on.
				if i := strings.Index(line, "FATAL:"); i >= 0 {
					return strings.Join(strings.Fields(line[i:]), " ")
				}
				return line
			}
		}
	}
	return ""
}
