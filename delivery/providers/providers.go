// Package providers is the registry of Herald's providers: the
// constructor of each catalog entry's channel key, one line per provider
// package. The delivery core knows providers only as provider.New; a server
// passes Registry to delivery.Config.Providers. Adding a provider is a
// package under delivery/, its catalog entry, and one line here.
package providers

import (
	"github.com/heraldhq/herald/delivery/apns"
	"github.com/heraldhq/herald/delivery/discord"
	"github.com/heraldhq/herald/delivery/expo"
	"github.com/heraldhq/herald/delivery/fcm"
	"github.com/heraldhq/herald/delivery/mailgun"
	"github.com/heraldhq/herald/delivery/postmark"
	"github.com/heraldhq/herald/delivery/provider"
	"github.com/heraldhq/herald/delivery/resend"
	"github.com/heraldhq/herald/delivery/sendgrid"
	"github.com/heraldhq/herald/delivery/ses"
	"github.com/heraldhq/herald/delivery/slack"
	"github.com/heraldhq/herald/delivery/smtp"
	"github.com/heraldhq/herald/delivery/teams"
	"github.com/heraldhq/herald/delivery/twilio"
	"github.com/heraldhq/herald/delivery/vonage"
	"github.com/heraldhq/herald/delivery/webhook"
)

// Registry returns the constructors of the providers by channel key (`twilio.ChannelKey:
// twilio.New`), a new map on each call. The in-app entry, which needs the
// delivery Service's event log, is the Service's own. A catalog entry
// without a provider fails its sends as not sent, so the next channel of
// the kind is tried.
func Registry() map[string]provider.New {
	return map[string]provider.New{
		smtp.ChannelKey:     smtp.New,
		ses.ChannelKey:      ses.New,
		twilio.ChannelKey:   twilio.New,
		slack.ChannelKey:    slack.New,
		fcm.ChannelKey:      fcm.New,
		webhook.ChannelKey:  webhook.New,
		teams.ChannelKey:    teams.New,
		discord.ChannelKey:  discord.New,
		postmark.ChannelKey: postmark.New,
		sendgrid.ChannelKey: sendgrid.New,
		mailgun.ChannelKey:  mailgun.New,
		vonage.ChannelKey:   vonage.New,
		expo.ChannelKey:     expo.New,
		apns.ChannelKey:     apns.New,
		resend.ChannelKey:   resend.New,
	}
}
