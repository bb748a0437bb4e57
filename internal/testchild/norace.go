//go:build !race

package testchild

// raceEnabled reports whether this binary was built with the race detector.
const raceEnabled = false
