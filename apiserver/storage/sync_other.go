//go:build !linux

package storage

import "os"

// datasync flushes f to the device (fsync; fdatasync is Linux's).
func datasync(f *os.File) error { return f.Sync() }
