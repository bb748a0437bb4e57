// Package events names every fact Herald records and defines its payload:
// the schema of the event log. Writers (control, engine, delivery) build
// these payloads; projections read them back. Types are past-tense facts.
//
// # Caveats
//
// Payloads are stored forever and replayed by `herald rebuild`: add
// fields, never change the meaning of an existing one. Secrets inside a
// payload are sealed (see package secrets) before they get here.
package events
