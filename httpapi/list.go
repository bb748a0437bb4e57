package httpapi

import (
	"net/http"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/projections"
)

// pageReader reads one page of a list: its rows and the cursor of the next
// page ("" after the last).
type pageReader[T any] func(projections.Page) (rows []T, next string, err error)

// servePage answers a paged GET: it reads ?limit= and ?cursor= (see page),
// then answers as answerPage. A handler reads its path variables before,
// so that a bad one is reported first.
func servePage[T, V any](s *Server, w http.ResponseWriter, r *http.Request, read pageReader[T], view func(T) V) error {
	p, err := page(r)
	if err != nil {
		return err
	}
	return answerPage(s, w, r, p, read, view)
}

// answerPage makes the read see every write acknowledged before it (see
// caughtUp), reads page p and writes it as a list of views.
func answerPage[T, V any](s *Server, w http.ResponseWriter, r *http.Request, p projections.Page, read pageReader[T], view func(T) V) error {
	if err := s.caughtUp(r); err != nil {
		return err
	}
	rows, next, err := read(p)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, newList(mapSlice(rows, view), next))
	return nil
}

// checkingQueryIDs reads with read once the ids and status of r's query
// are well formed (see checkQueryIDs).
func checkingQueryIDs[T any](r *http.Request, read pageReader[T]) pageReader[T] {
	return func(p projections.Page) ([]T, string, error) {
		var probs apierr.Problems
		checkQueryIDs(r, &probs)
		if err := probs.Err(); err != nil {
			return nil, "", err
		}
		return read(p)
	}
}
