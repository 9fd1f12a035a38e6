package storage

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// MaxFilename bounds a stored filename.
const MaxFilename = 255

// BaseName keeps the last element of a path of either slash, trimmed; ""
// for a name that has none (so the file needs another).
func BaseName(name string) string {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	name = strings.TrimSpace(name)
	if name == "." || name == ".." {
		return ""
	}
	return name
}

// CheckNewFile checks a new file's name and purpose and returns the name to
// store (its BaseName).
func CheckNewFile(nf NewFile) (string, error) {
	name := BaseName(nf.Filename)
	if name == "" {
		return "", fmt.Errorf("%w: the file needs a name", ErrInvalid)
	}
	if len(name) > MaxFilename {
		return "", fmt.Errorf("%w: the filename is longer than %d bytes", ErrInvalid, MaxFilename)
	}
	if nf.Purpose == "" {
		return "", fmt.Errorf("%w: the file needs a purpose", ErrInvalid)
	}
	return name, nil
}

// ContextReader reads r until ctx is done, so a cancelled upload stops
// between reads.
func ContextReader(ctx context.Context, r io.Reader) io.Reader {
	return &contextReader{ctx: ctx, r: r}
}

type contextReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *contextReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
