package main

import (
	"context"
	"fmt"
	"io"

	"github.com/heraldhq/herald/devmail"
)

// devmailCmd runs the development SMTP catcher until ctx ends: it accepts
// any mail on --smtp and lists it on --http (an HTML page at / and JSON at
// /api/messages).
func devmailCmd(ctx context.Context, args []string, stderr io.Writer) error {
	var cfg devmail.Config
	fs := newFlagSet("devmail")
	fs.StringVar(&cfg.SMTPAddr, "smtp", devmail.DefaultSMTPAddr, "SMTP listen address")
	fs.StringVar(&cfg.HTTPAddr, "http", devmail.DefaultHTTPAddr, "HTTP listen address of the page and the JSON API")
	fs.IntVar(&cfg.MaxMessages, "max", 0, "messages kept, oldest dropped first (0: the default, 1000)")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return fmt.Errorf("%w: devmail: %v", errUsage, err)
	}
	cfg.Logger = newLogger(stderr)
	srv, err := devmail.NewServer(cfg)
	if err != nil {
		return err
	}
	return srv.Run(ctx)
}
