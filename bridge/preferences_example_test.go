package bridge_test

import (
	"context"

	"github.com/heraldhq/herald/bridge"
)

// A password reset is critical: it goes out whatever the subscriber's
// preferences say, and carries no unsubscribe link. A digest is off by
// email unless the subscriber turns it on, and its footer links to the
// subscriber's preference page when the service has a public URL.
func ExampleWithDefaultChannels() {
	reset := bridge.MustWorkflow("password_reset", func(ctx *bridge.Context, p struct{ Link string }) error {
		_, err := bridge.Send(ctx, "mail", bridge.Email, func(context.Context) (bridge.SendContent, error) {
			return bridge.SendContent{Subject: "Reset your password", Body: p.Link}, nil
		})
		return err
	}, bridge.WithCritical())
	digest := bridge.MustWorkflow("digest", func(ctx *bridge.Context, _ struct{}) error {
		footer := ""
		if ctx.Links != nil {
			footer = "\n\nChoose what you receive: " + ctx.Links.Preferences
		}
		_, err := bridge.Send(ctx, "mail", bridge.Email, func(context.Context) (bridge.SendContent, error) {
			return bridge.SendContent{Subject: "Your digest", Body: "Three new comments." + footer}, nil
		})
		return err
	}, bridge.WithDefaultChannels(map[bridge.Channel]bool{bridge.Email: false, bridge.InApp: true}))
	h := bridge.Serve(bridge.NewRegistry().MustRegister(reset, digest), bridge.Options{SigningKey: "whsec_example"})
	call(h, `{"action":"discover"}`)
	// Output:
	// 200 {"workflows":[{"workflowId":"password_reset","schedule":null,"payloadSchema":null,"critical":true},{"workflowId":"digest","schedule":null,"payloadSchema":null,"preferences":{"channels":{"email":false,"in_app":true}}}]}
}
