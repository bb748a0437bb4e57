package main

import (
	"context"
	"flag"
	"io"

	"github.com/heraldhq/herald/devmail"
)

// devmailCmd runs the development SMTP catcher until ctx ends: it accepts
// any mail on --smtp and lists it on --http (an HTML page at / and JSON at
// /api/messages).
func devmailCmd(fs *flag.FlagSet) action {
	var cfg devmail.Config
	fs.StringVar(&cfg.SMTPAddr, "smtp", devmail.DefaultSMTPAddr, "SMTP listen address")
	fs.StringVar(&cfg.HTTPAddr, "http", devmail.DefaultHTTPAddr, "HTTP listen address of the page and the JSON API")
	fs.IntVar(&cfg.MaxMessages, "max", 0, "messages kept, oldest dropped first (0: the default, 1000)")
	return func(ctx context.Context, _ []string, _, stderr io.Writer) error {
		cfg.Logger = newLogger(stderr)
		srv, err := devmail.NewServer(cfg)
		if err != nil {
			return err
		}
		return srv.Run(ctx)
	}
}
