// Command herald is the Herald notification service: `herald serve` runs
// it; the other subcommands administer it. See `herald help`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	// The zone database inside the binary: subscribers' time zones
	// resolve on a host (or a scratch container) that has none.
	_ "time/tzdata"
)

const usage = `herald — notification orchestration

Usage:
  herald serve [--http ADDR] [--data DIR] [--nats-url URLS] [--nats-creds FILE] [--replicas N] [--sync interval|always]
               [--memory-limit SIZE] [--public-url URL] [--inbox-origins ORIGINS]   (herald serve --help: every setting)
  herald tenant create NAME | tenant list
  herald key create TENANT | key list TENANT | key revoke TENANT PREFIX
  herald audit [--tenant ID] [--since RFC3339] [--type EVENT_TYPE] [--follow]
  herald rebuild
  herald devmail [--smtp ADDR] [--http ADDR] [--max N]
  herald bench [--quick] [--json] [--scenarios LIST] [--sync LIST] [--sizes LIST] …  (herald bench -h)
  herald healthcheck [--http ADDR]   (exits 0 when GET /healthz answers 200; the image's HEALTHCHECK)
  herald version
  herald help

audit and rebuild also take --data, --nats-url and --nats-creds (and audit
--http), like serve; tenant and key take --http and --data (the dir holding
admin.token, unless HERALD_ADMIN_TOKEN is set) before their arguments.
Configuration comes from flags, then HERALD_* environment variables, then
defaults; herald serve --help lists every setting.
`

// errUsage marks a command line that does not parse; main exits 2.
var errUsage = errors.New("usage")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case err == nil:
	case errors.Is(err, errUsage):
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	default:
		fmt.Fprintf(os.Stderr, "herald: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errUsage
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], stdout, stderr)
	case "tenant":
		return tenantCmd(ctx, args[1:], stdout)
	case "key":
		return keyCmd(ctx, args[1:], stdout)
	case "healthcheck":
		return healthcheckCmd(ctx, args[1:], stdout)
	case "devmail":
		return devmailCmd(ctx, args[1:], stderr)
	case "bench":
		return benchCmd(ctx, args[1:], stdout, stderr)
	case "audit":
		return auditCmd(ctx, args[1:], stdout, stderr)
	case "rebuild":
		return rebuildCmd(ctx, args[1:], stdout, stderr)
	case "version", "--version", "-v":
		return version(stdout)
	case "help", "--help", "-h":
		fmt.Fprint(stdout, usage)
		return nil
	}
	return errUsage
}

// newFlagSet returns a flag set that reports errors instead of exiting.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}
