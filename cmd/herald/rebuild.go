package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/heraldhq/herald/service"
)

// rebuildCmd recreates the data dir's projections from the event log and
// prints the new file's checksum beside the old one's.
func rebuildCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var flags service.Flags
	fs := newFlagSet("rebuild")
	configFlags(fs, &flags)
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return fmt.Errorf("%w: rebuild: %v", errUsage, err)
	}
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
