//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package storage

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockDir takes an exclusive flock on path, created if needed; closing the
// file releases it, and so does the end of the process, however it ends.
func lockDir(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("storage: data directory lock: %w", err)
	}
	sc, err := f.SyscallConn()
	if err == nil {
		cerr := sc.Control(func(fd uintptr) { err = syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB) })
		if cerr != nil {
			err = cerr
		}
	}
	if err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("storage: %s: %w: another process (or store) has it open", path, ErrInUse)
		}
		return nil, fmt.Errorf("storage: data directory lock: %w", err)
	}
	return f, nil
}
