// Package inputfile reads the files a user names (results, configuration
// and sweep files, tables, tokens) within bounds: a regular file of at
// most a given size, read in chunks that stop when the context ends. A
// device (/dev/zero), a named pipe or a file larger than its kind can be
// is refused at once, in one line, instead of filling memory or blocking.
// It depends on nothing of tierbench.
package inputfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
)

// Refusals, for errors.Is.
var (
	ErrNotRegular = errors.New("not a regular file")
	ErrTooLarge   = errors.New("file too large")
)

// chunk is how much is read between two looks at the context.
const chunk = 1 << 20

// Read returns the content of path, a regular file of at most max bytes.
// what names the file's kind in the refusals ("a result file").
func Read(ctx context.Context, path, what string, max int64) ([]byte, error) {
	// Stat before opening: opening a named pipe blocks until a writer
	// comes.
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := check(path, what, info, max); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The path may have been replaced between the two looks.
	if info, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := check(path, what, info, max); err != nil {
		return nil, err
	}
	// A file that grows while it is read stops at max+1 bytes.
	b, err := io.ReadAll(ctxReader{ctx, io.LimitReader(f, max+1)})
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if int64(len(b)) > max {
		return nil, refuse(ErrTooLarge, "%s grew past %s while it was read, more than %s may be", path, Size(max), what)
	}
	return b, nil
}

// ctxReader reads at most a chunk at a time, and stops once ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, context.Cause(c.ctx)
	}
	return c.r.Read(p[:min(len(p), chunk)])
}

func check(path, what string, info os.FileInfo, max int64) error {
	switch {
	case info.IsDir():
		return refuse(ErrNotRegular, "%s is a directory: give %s", path, what)
	case !info.Mode().IsRegular():
		return refuse(ErrNotRegular, "%s is not a regular file (%s): give %s", path, kind(info.Mode()), what)
	case info.Size() > max:
		return refuse(ErrTooLarge, "%s is %s, more than %s may be (at most %s)", path, Size(info.Size()), what, Size(max))
	}
	return nil
}

// refusal is a refusal's one line, which errors.Is matches to its class.
type refusal struct {
	class error
	msg   string
}

func (r *refusal) Error() string        { return r.msg }
func (r *refusal) Is(target error) bool { return target == r.class }

func refuse(class error, format string, args ...any) error {
	return &refusal{class: class, msg: fmt.Sprintf(format, args...)}
}

func kind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return "mode " + m.String()
}

// Size is n bytes in the largest unit that keeps it at 1 or more: 512 B,
// 1.5 KiB, 256 MiB.
func Size(n int64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	v, u := float64(n)/1024, 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	return fmt.Sprintf("%.3g %ciB", v, units[u])
}
