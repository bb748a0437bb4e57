package apierr_test

import (
	"errors"
	"fmt"

	"github.com/heraldhq/herald/apierr"
)

// maxExternalIDChars bounds an id in this example; each command chooses
// its own bound.
const maxExternalIDChars = 256

// finish refuses a malformed id with a 422 naming the field, and a
// finished run with a 409 run_finished.
func finish(id string) error {
	var p apierr.Problems
	if !apierr.ValidID(id, maxExternalIDChars) {
		p.Add("externalId", "must be 1 to %d printable characters", maxExternalIDChars)
	}
	if err := p.Err(); err != nil {
		return err // 422 validation_failed with details
	}
	return apierr.New(apierr.CodeRunFinished, "run "+id+" is finished")
}

func Example() {
	for _, id := range []string{"", "r1"} {
		err := finish(id)
		var ce *apierr.Error
		var ve *apierr.ValidationError
		switch {
		case errors.As(err, &ve):
			fmt.Println(apierr.Status(ve.Code), ve.Code, ve.Problems[0].Field, errors.Is(err, apierr.ErrInvalid))
		case errors.As(err, &ce):
			fmt.Println(apierr.Status(ce.Code), ce.Code, err, errors.Is(err, apierr.ErrConflict))
		}
	}
	// Output:
	// 422 validation_failed externalId true
	// 409 run_finished run r1 is finished true
}
