//go:build race

package main

// raceEnabled: the test binary was built with -race, so the demo is too,
// from the same compiled packages.
const raceEnabled = true
