// Package runstate folds the events of one run into its state: the pure
// heart of the durable engine, shared by the engine (which decides the
// next action from it) and the projections (which show it).
//
// # Basics
//
// Fold (or State.Apply, one event at a time) is a function of the events
// alone: no clock, no randomness, no map iteration. The same history always
// gives the same State, which is what makes replay, rebuild and the golden
// histories under testdata/ possible.
//
// # Caveats
//
// Apply ignores events after the run finished (a late signal or a loser's
// write cannot revive it) and refuses events of another run.
package runstate
