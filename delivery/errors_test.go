package delivery_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/heraldhq/herald/delivery"
)

func TestClassify(t *testing.T) {
	cases := []struct {
		err      error
		code     string
		terminal bool
	}{
		{fmt.Errorf("%w: %q", delivery.ErrNoChannel, "email"), delivery.CodeNoChannel, true},
		{fmt.Errorf("%w: subscriber %q has no email address", delivery.ErrNoAddress, "ada"), delivery.CodeNoAddress, true},
		{fmt.Errorf("%w: 550", delivery.ErrProviderRejected), delivery.CodeProviderRejected, true},
		{delivery.Request{}.Validate(), delivery.CodeInvalidRequest, true},
		{fmt.Errorf("%w: 451", delivery.ErrProviderUnavailable), delivery.CodeProviderUnavailable, false},
		{fmt.Errorf("%w: later", delivery.ErrInProgress), delivery.CodeInProgress, false},
		{errors.New("the log is down"), delivery.CodeFailed, false},
		{fmt.Errorf("waiting: %w", context.DeadlineExceeded), delivery.CodeFailed, false},
		{&delivery.Error{Code: "invalid_id", Terminal: true, Message: "too long"}, "invalid_id", true},
	}
	for _, c := range cases {
		f := delivery.Classify(c.err)
		if f.Code != c.code || f.Terminal != c.terminal || f.Message != c.err.Error() {
			t.Errorf("Classify(%v) = %+v, want %s terminal=%v", c.err, f, c.code, c.terminal)
		}
	}
}
