package main

import (
	"encoding/base64"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/heraldhq/herald/secrets"
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

// toolConfig loads the configuration of audit and rebuild: serve's, except
// that HERALD_MASTER_KEY is not required with HERALD_NATS_URL, since these
// tools never open a secret (a placeholder that is never used stands in).
func toolConfig(f service.Flags) (service.Config, error) {
	placeholder := base64.StdEncoding.EncodeToString(make([]byte, secrets.KeySize))
	env := func(k string) string {
		if v := os.Getenv(k); k != secrets.EnvMasterKey || strings.TrimSpace(v) != "" {
			return v
		}
		return placeholder
	}
	cfg, err := service.LoadConfig(env, f)
	if err != nil {
		return cfg, fmt.Errorf("configuration:\n%w", err)
	}
	return cfg, nil
}
