package delivery

import "errors"

// ErrNoChannel is returned by [Select] when the tenant has no enabled channel
// of the kind a send step asks for. It is wrapped with the kind
// (`delivery: no enabled channel: "email"`). The failure is terminal:
// retrying cannot help until the tenant enables a channel.
var ErrNoChannel = errors.New("delivery: no enabled channel")
