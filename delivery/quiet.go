package delivery

import (
	"context"
	"errors"
	"time"

	"github.com/heraldhq/herald/preferences"
	"github.com/heraldhq/herald/projections"
)

// QuietHold is the decision of the recipient's quiet hours on a send
// (preferences.QuietHold): whether a send of kind in workflow to
// subscriber, at now, waits, and until when. It reads the subscriber's
// preferences and time zone, and the workflow's critical flag and
// defaults as of the tenant's last sync, once store has applied seen
// (as Request.Seen; zero: no wait). The engine asks it before every send
// and records a hold; explaining a held send afterwards asks it the same.
// An unknown subscriber has no quiet hours.
func QuietHold(ctx context.Context, store *projections.Store, tenant, workflow, subscriber, kind string, seen uint64, now time.Time) (preferences.Hold, error) {
	if subscriber == "" {
		return preferences.Hold{}, nil
	}
	if seen != 0 {
		if err := store.WaitFor(ctx, seen); err != nil {
			return preferences.Hold{}, err
		}
	}
	doc, err := store.Preferences(tenant, subscriber)
	if err != nil || doc.QuietHours == nil {
		return preferences.Hold{}, err
	}
	def, err := store.WorkflowDefaults(tenant, workflow)
	if err != nil {
		return preferences.Hold{}, err
	}
	tz := ""
	sub, err := store.Subscriber(tenant, subscriber)
	switch {
	case errors.Is(err, projections.ErrNotFound):
		return preferences.Hold{}, nil
	case err != nil:
		return preferences.Hold{}, err
	case sub.Timezone != nil:
		tz = *sub.Timezone
	}
	return preferences.QuietHold(doc, workflow, def, kind, tz, now), nil
}
