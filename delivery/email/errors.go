package email

import "errors"

// ErrInvalid reports a Message that cannot be composed: an address or a
// Message-ID that is not well formed. Compose's errors wrap it; they name
// the field and quote its value, which holds no secret.
var ErrInvalid = errors.New("email: invalid message")
