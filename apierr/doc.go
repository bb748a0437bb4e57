// Package apierr is the vocabulary of failures Herald's API answers: the
// kinds of failure (each maps to one HTTP status in httpapi's one table),
// the stable error codes API clients read, the field problems of a 422,
// and the validators that decide what a well-formed id is.
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
//	return apierr.New(apierr.ErrConflict, "run_finished", "run "+id+" is finished")
//
// errors.Is(err, apierr.ErrConflict) holds for both shapes; the HTTP layer
// picks the status by kind and the code from the error.
package apierr
