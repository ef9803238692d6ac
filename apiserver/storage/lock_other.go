//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package storage

import (
	"errors"
	"os"
)

// lockDir is not implemented here: a data directory needs flock.
func lockDir(string) (*os.File, error) {
	return nil, errors.New("storage: a data directory needs flock, which this platform lacks")
}
