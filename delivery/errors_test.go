package delivery_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/delivery"
)

func TestClassify(t *testing.T) {
	cases := []struct {
		err      error
		code     string
		terminal bool
	}{
		{fmt.Errorf("%w: %q", delivery.ErrNoChannel, "email"), apierr.CodeNoChannel, true},
		{fmt.Errorf("%w: subscriber %q has no email address", delivery.ErrNoAddress, "ada"), apierr.CodeNoAddress, true},
		{fmt.Errorf("%w: 550", delivery.ErrProviderRejected), apierr.CodeProviderRejected, true},
		{delivery.Request{}.Validate(), apierr.CodeValidationFailed, true},
		{fmt.Errorf("%w: 451", delivery.ErrProviderUnavailable), apierr.CodeProviderUnavailable, false},
		{fmt.Errorf("%w: later", delivery.ErrInProgress), apierr.CodeDeliveryInProgress, false},
		{errors.New("the log is down"), apierr.CodeDeliveryFailed, false},
		{fmt.Errorf("waiting: %w", context.DeadlineExceeded), apierr.CodeDeliveryFailed, false},
		{&delivery.Error{Code: "invalid_id", Terminal: true, Message: "too long"}, "invalid_id", true},
	}
	for _, c := range cases {
		f := delivery.Classify(c.err)
		if f.Code != c.code || f.Terminal != c.terminal || f.Message != c.err.Error() {
			t.Errorf("Classify(%v) = %+v, want %s terminal=%v", c.err, f, c.code, c.terminal)
		}
	}
}
