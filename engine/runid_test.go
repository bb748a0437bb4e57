package engine_test

import (
	"testing"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/engine"
)

// Every run id the engine mints names a run for the API's commands.
func TestRunIDsAreValidForControl(t *testing.T) {
	t.Parallel()
	for _, sub := range []string{"", "u1", "a b@example.com", "ユーザー"} {
		if id := engine.RunID("ten_1", "txn_1", sub); !control.ValidRunID(id) {
			t.Errorf("RunID(%q) = %q, refused by control.ValidRunID", sub, id)
		}
	}
}

var _ control.Runtime = (*engine.Engine)(nil)
