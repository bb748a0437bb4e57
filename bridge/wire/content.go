package wire

import "encoding/json"

// The content of a send step, by channel kind (CONTRACT.md §10). A send
// step's content is one of these, as JSON, at most 256 KiB; a content
// missing a required field fails the step with invalid_content.

// EmailContent is the content of an email. Subject is required. Body alone
// keeps the plain rule (HTML when it looks like HTML, text otherwise);
// HTML and Text together make a multipart/alternative message.
type EmailContent struct {
	Subject string `json:"subject"`
	Body    string `json:"body,omitempty"`
	HTML    string `json:"html,omitempty"`
	Text    string `json:"text,omitempty"`
	ReplyTo string `json:"replyTo,omitempty"`
	// Layout picks the tenant's email layout the HTML part is wrapped in:
	// a layout id as a JSON string ("\"brand\""), or null for none.
	// Absent (nil): the tenant's default layout, if one is marked.
	Layout json.RawMessage `json:"layout,omitempty"`
}

// SMSContent is the content of a text message. Body is required.
type SMSContent struct {
	Body string `json:"body"`
}

// ChatContent is the content of a chat message. Body is required; Blocks
// are the chat provider's rich layout (Slack Block Kit), passed as they
// are.
type ChatContent struct {
	Body   string          `json:"body"`
	Blocks json.RawMessage `json:"blocks,omitempty"`
}

// PushContent is the content of a push notification. Title and Body are
// required; Data is the provider's key-value payload.
type PushContent struct {
	Title string            `json:"title"`
	Body  string            `json:"body"`
	Data  map[string]string `json:"data,omitempty"`
}

// InAppContent is the content of an in-app inbox message. Body is
// required.
type InAppContent struct {
	Subject       string          `json:"subject,omitempty"`
	Body          string          `json:"body"`
	Data          json.RawMessage `json:"data,omitempty"`
	PrimaryAction *InAppAction    `json:"primaryAction,omitempty"`
}

// InAppAction is an in-app message's button: a label and where it leads.
type InAppAction struct {
	Label string `json:"label"`
	URL   string `json:"url"`
}

// WebhookContent is the content of a webhook send: Data is posted as the
// message's data. Data is required.
type WebhookContent struct {
	Data json.RawMessage `json:"data"`
}
