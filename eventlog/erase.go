package eventlog

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// SecureDelete removes the event at seq from the EVENTS stream and has the
// server overwrite its bytes in the store (JetStream's secure delete), so
// neither a read nor the store's files give it back. A sequence already
// gone is no error.
func (l *Log) SecureDelete(ctx context.Context, seq uint64) error {
	err := l.retrying(ctx, func(ctx context.Context) error {
		return l.events.SecureDeleteMsg(ctx, seq)
	})
	if err == nil || errors.Is(err, jetstream.ErrMsgNotFound) || errors.Is(err, jetstream.ErrMsgDeleteUnsuccessful) {
		if err != nil {
			// Deleted meanwhile (or never there): make sure it is gone.
			if _, gerr := l.getMsg(ctx, seq); !errors.Is(gerr, jetstream.ErrMsgNotFound) {
				return fmt.Errorf("eventlog: secure delete #%d: %w", seq, err)
			}
		}
		return nil
	}
	return fmt.Errorf("eventlog: secure delete #%d: %w", seq, err)
}
