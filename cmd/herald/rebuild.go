package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/heraldhq/herald/service"
)

// rebuildCmd recreates the data dir's projections from the event log and
// prints the new file's checksum beside the old one's.
func rebuildCmd(fs *flag.FlagSet) action {
	var flags service.Flags
	configFlags(fs, &flags)
	return func(ctx context.Context, _ []string, stdout, stderr io.Writer) error {
		return rebuild(ctx, flags, stdout, stderr)
	}
}

func rebuild(ctx context.Context, flags service.Flags, stdout, stderr io.Writer) error {
	cfg, err := toolConfig(flags)
	if err != nil {
		return err
	}
	rep, err := service.Rebuild(ctx, cfg, newLogger(stderr))
	if errors.Is(err, service.ErrDataDirInUse) {
		return fmt.Errorf("%w: stop `herald serve` on this data dir first", err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "projections: %s\nevents:      %d\ntook:        %v\nchecksum:    %s\n",
		rep.Path, rep.LastSeq, rep.Took.Round(1e6), rep.Checksum)
	switch {
	case rep.Previous == "":
		fmt.Fprintln(stdout, "previous:    none")
	case rep.Previous == rep.Checksum:
		fmt.Fprintf(stdout, "previous:    %s (identical)\n", rep.Previous)
	default:
		fmt.Fprintf(stdout, "previous:    %s (differed; replaced)\n", rep.Previous)
	}
	return nil
}
