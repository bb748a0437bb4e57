package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Set at build time with -ldflags "-X main.buildVersion=… -X main.buildCommit=…".
var (
	buildVersion = "dev"
	buildCommit  = ""
)

// versionCmd is `herald version`.
func versionCmd(*flag.FlagSet) action {
	return func(_ context.Context, _ []string, stdout, _ io.Writer) error {
		return version(stdout)
	}
}

func version(w io.Writer) error {
	commit := buildCommit
	if commit == "" {
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" {
					commit = s.Value
				}
			}
		}
	}
	if commit == "" {
		commit = "unknown"
	}
	fmt.Fprintf(w, "herald %s\ncommit %s\ngo %s\nnats-server %s\nnats.go %s\n",
		buildVersion, commit, runtime.Version(), server.VERSION, nats.Version)
	return nil
}
