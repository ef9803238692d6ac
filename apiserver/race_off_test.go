//go:build !race

package apiserver_test

// raceEnabled tells whether the tests run under the race detector, whose
// shadow memory multiplies a process's (TestAttacks' memory cap).
const raceEnabled = false
