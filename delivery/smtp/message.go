package smtp

import (
	"crypto/rand"
	"fmt"
	"strings"
	"time"

	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/delivery/email"
)

// compose renders msg through package email as an RFC 5322 message with
// CRLF line endings, dated now. It returns the message and its Message-ID
// without angle brackets. cfg and msg must have passed Validate; a replyTo
// that is not an address fails with ErrInvalid.
func compose(cfg Config, msg Message, now time.Time) (data []byte, messageID string, err error) {
	messageID = msg.MessageID
	if messageID == "" {
		domain := cfg.FromEmail[strings.LastIndexByte(cfg.FromEmail, '@')+1:]
		messageID = strings.ToLower(rand.Text()) + "@" + domain
	}
	data, err = email.Compose(email.Message{
		FromEmail: cfg.FromEmail,
		FromName:  cfg.FromName,
		To:        msg.To,
		MessageID: messageID,
		Date:      now,
		Content: wire.EmailContent{
			Subject: msg.Subject, Body: msg.Body, HTML: msg.HTML, Text: msg.Text, ReplyTo: msg.ReplyTo,
		},
		ListUnsubscribe: msg.ListUnsubscribe,
	})
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return data, messageID, nil
}
