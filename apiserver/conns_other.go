//go:build !unix

package apiserver

// openFileLimit reports no limit where the platform has no RLIMIT_NOFILE.
func openFileLimit() (uint64, bool) { return 0, false }
