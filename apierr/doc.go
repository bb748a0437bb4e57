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
// carrying a code, or as a *ValidationError listing every bad field:
//
//	var p apierr.Problems
//	if !apierr.ValidID(id, apierr.MaxExternalIDChars) {
//		p.Add("externalId", "must be 1 to %d printable characters", apierr.MaxExternalIDChars)
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
package apierr
