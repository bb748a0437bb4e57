package main

import (
	"flag"

	"github.com/heraldhq/herald/service"
)

// configFlags declares the flags that tell a tool where herald lives: the
// same names, meanings and environment fallbacks as `herald serve`'s.
func configFlags(fs *flag.FlagSet, f *service.Flags) {
	fs.StringVar(&f.HTTPAddr, "http", "", "REST API address of the running server (HERALD_HTTP_ADDR)")
	fs.StringVar(&f.DataDir, "data", "", "data directory (HERALD_DATA_DIR)")
	fs.StringVar(&f.NATSURL, "nats-url", "", "external NATS URLs, comma separated (HERALD_NATS_URL)")
	fs.StringVar(&f.NATSCreds, "nats-creds", "", "NATS credentials file (HERALD_NATS_CREDS)")
}
