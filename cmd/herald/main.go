// Command herald is the Herald notification service: `herald serve` runs
// it; the other subcommands administer it. See `herald help`.
package main

import (
	"context"
	"flag"
	"io"
	"os"
	"os/signal"
	"syscall"

	// The zone database inside the binary: subscribers' time zones
	// resolve on a host (or a scratch container) that has none.
	_ "time/tzdata"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := report(run(ctx, os.Args[1:], os.Stdout, os.Stderr), os.Stderr)
	stop()
	os.Exit(code)
}

// run runs the herald command line args (without the program's name);
// report turns its answer into the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return commandTree().run(ctx, args, stdout, stderr)
}

// newFlagSet returns a flag set that reports errors instead of exiting.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}
