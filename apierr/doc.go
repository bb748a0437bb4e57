// Package apierr is the vocabulary of failures Herald answers and records:
// the kinds of failure (each maps to one HTTP status), the stable error
// codes API clients read in an error body, a run's or a step's error and
// a delivery's (each declared once, with its one status, in codes.go), the
// field problems of a 422, and the validators that decide what a
// well-formed id is.
//
// It is a leaf: it imports only the standard library, so every layer
// (control, engine, delivery, httpapi) can speak it without importing
// another layer for its error types.
//
// # Basics
//
// A command that refuses its input returns an error that wraps one of the
// kinds (ErrNotFound, ErrConflict, ErrInvalid, …), usually as an *Error
// carrying a code, or as a *ValidationError listing every bad field (the
// package's Example runs this):
//
//	const maxExternalIDChars = 256 // each command chooses its bound
//	var p apierr.Problems
//	if !apierr.ValidID(id, maxExternalIDChars) {
//		p.Add("externalId", "must be 1 to %d printable characters", maxExternalIDChars)
//	}
//	if err := p.Err(); err != nil {
//		return err // 422 validation_failed with details
//	}
//	return apierr.New(apierr.CodeRunFinished, "run "+id+" is finished")
//
// Every code is a constant of this package, and the table of codes gives
// each one HTTP status ([Status]); New gives the error the kind of that
// status, so errors.Is(err, apierr.ErrConflict) holds for a run_finished
// error as for any 409, and for both shapes. The HTTP layer picks the
// status by kind and the code from the error.
//
// A lower layer's sentinels are of this vocabulary too, so the HTTP layer
// names no other layer's errors: a projection read of nothing is an *Error
// of code not_found, a cursor a list did not issue a *ValidationError of
// the field cursor, and a subject the server would refuse a [Masked] error
// of code invalid_id, whose client reads that an id is malformed, never
// the subject.
package apierr
