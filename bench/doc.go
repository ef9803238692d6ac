// Package bench measures kloop side by side with client-go and
// controller-runtime, in one run, so that every figure is a ratio to its
// anchor on the same machine at the same moment. It is a module of its own so
// that kloop itself never depends on client-go's tools or on
// controller-runtime. See README.md for the commands and the numbers.
package bench
