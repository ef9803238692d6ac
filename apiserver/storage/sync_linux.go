package storage

import (
	"os"
	"syscall"
)

// datasync flushes f's data (and the metadata needed to read it, such as
// its size) to the device: fdatasync, as etcd's log does on Linux.
func datasync(f *os.File) error {
	sc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	if cerr := sc.Control(func(fd uintptr) {
		for {
			if err = syscall.Fdatasync(int(fd)); err != syscall.EINTR {
				return
			}
		}
	}); cerr != nil {
		return cerr
	}
	return err
}
