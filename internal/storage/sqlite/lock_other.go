//go:build !unix

package sqlite

import "os"

// lockDir does not lock on systems without flock.
func lockDir(string) (*os.File, error) { return nil, nil }
