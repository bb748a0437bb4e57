package egress

import (
	"errors"
	"fmt"
	"net/netip"
)

// ErrRefused is matched by every refusal of the policy: a dial to a refused
// address, a destination that resolves only to refused addresses, an address
// that does not parse. Terminal: the same destination is refused again.
var ErrRefused = errors.New("egress: destination refused")

// RefusedError reports an address the policy refused. It matches
// [ErrRefused]. Its text names the address: log it, do not show it to the
// tenant (use [PublicMessage]).
type RefusedError struct {
	// Addr is the refused address; invalid when the dialled address did
	// not parse.
	Addr netip.Addr
	// Range names why it is refused: "loopback", "private", "link-local"…
	Range string
}

// Error implements error.
func (e *RefusedError) Error() string {
	if !e.Addr.IsValid() {
		return fmt.Sprintf("egress: %s refused (private egress is off)", e.Range)
	}
	return fmt.Sprintf("egress: %s address %s refused (private egress is off)", e.Range, e.Addr)
}

// Is reports whether target is ErrRefused.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// EgressRefused reports true. Packages that cannot import egress (the
// stdlib-only bridge SDK) recognise a refusal by this method.
func (e *RefusedError) EgressRefused() bool { return true }

// PublicMessage is the sentence a tenant sees for a refused destination: it
// names no address.
const PublicMessage = "destination refused: it resolves to a loopback, private, link-local or otherwise internal address"
