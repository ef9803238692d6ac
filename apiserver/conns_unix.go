//go:build unix

package apiserver

import "syscall"

// openFileLimit returns the process's limit of open files (its soft
// RLIMIT_NOFILE, which the Go runtime raises to the hard limit at start).
func openFileLimit() (uint64, bool) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, false
	}
	return rl.Cur, true
}
