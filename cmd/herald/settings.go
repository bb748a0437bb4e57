package main

import (
	"fmt"
	"io"
	"strings"
)

// setting is one configuration item of herald serve: its environment
// variable, its flag ("" when it has none), its default and what it means
// (Markdown: `code` spans and plain words only).
type setting struct {
	env, flag, def, meaning string
}

// settings is every HERALD_* variable herald serve reads, in the order the
// README's configuration table lists them. The README table and `herald
// serve --help` are both written from it, and a test fails when the code
// reads a HERALD_* variable that is missing here, or when the README's
// table or serve's flags differ from it.
var settings = []setting{
	{"HERALD_HTTP_ADDR", "--http", "`127.0.0.1:8080`", "REST API address"},
	{"HERALD_DATA_DIR", "--data", "`./herald-data`", "embedded JetStream store, projections, generated dev keys"},
	{"HERALD_NATS_URL", "--nats-url", "empty = embedded", "comma-separated URLs of an external NATS cluster"},
	{"HERALD_NATS_CREDS", "--nats-creds", "empty", "credentials file for the external cluster"},
	{"HERALD_REPLICAS", "--replicas", "`1`", "stream replicas (3 on a cluster)"},
	{"HERALD_SYNC", "--sync", "`interval`", "`always` fsyncs every write before acknowledging it"},
	{"HERALD_PUBLIC_URL", "--public-url", "empty = no links", "base URL at which browsers and mailbox providers reach the server: emails of non-critical workflows get `List-Unsubscribe` (one-click, RFC 8058) and Bridges get unsubscribe and preference page links (docs/preferences.md); every channel gets an `inboundUrl` where its provider reports deliveries, bounces and complaints (docs/channels.md); set it in development too (`http://127.0.0.1:8080`) to try them"},
	{"HERALD_INBOX_ORIGINS", "--inbox-origins", "empty = none", "comma-separated origins (`https://app.example.com`) whose pages may call the in-app inbox routes and load `/inbox.js`, or `*` (docs/inbox.md)"},
	{"HERALD_MEMORY_LIMIT", "--memory-limit", "empty = none", "the Go runtime's soft memory limit, e.g. `500MiB`, or `off`; `GOMEMLIMIT`, when set, wins; under a limit with `HERALD_CACHE_MIB` unset the engine's caches take a quarter of it (docs/operations.md)"},
	{"HERALD_MASTER_KEY", "", "generated `DATA_DIR/master.key` (embedded only)", "base64 of 32 bytes, the AES-256-GCM key for secrets at rest"},
	{"HERALD_MASTER_KEY_PREVIOUS", "", "empty", "comma-separated older master keys, still accepted for opening (rotation)"},
	{"HERALD_ADMIN_TOKEN", "", "generated `DATA_DIR/admin.token`", "Bearer token of the admin API"},
	{"HERALD_INTERNAL_TOKEN", "", "generated `DATA_DIR/internal.token`", "token the engine presents to `POST /v1/deliver`"},
	{"HERALD_RETRY_BASE", "", "`1s`", "first retry backoff of a failed step"},
	{"HERALD_MAX_ATTEMPTS", "", "`8`", "attempts of one step before the run fails"},
	{"HERALD_WEBHOOK_RETRY_BASE", "", "`5s`", "first retry of an outbound webhook message, doubling to 1 h, for 24 h (docs/webhooks.md)"},
	{"HERALD_WORKERS", "", "`128`", "runs one process advances at once (1–4096): more for a slow Bridge, fewer on a small machine with a fast one (BENCHMARKS.md)"},
	{"HERALD_MAX_CONNS", "", "`4096`", "open API connections at most; at the cap a new one closes the longest idle keep-alive connection, else the oldest that sent no whole request within `HERALD_HTTP_CAP_HEADER_TIMEOUT`, or waits in the listen backlog while all are busy"},
	{"HERALD_HTTP_READ_TIMEOUT", "", "`60s`", "reading one request, headers and body; a client idle mid-body is cut off"},
	{"HERALD_HTTP_WRITE_TIMEOUT", "", "`5m`", "answering one request (the admin audit stream and the inbox streams are exempt)"},
	{"HERALD_HTTP_IDLE_TIMEOUT", "", "`120s`", "an idle keep-alive connection is closed"},
	{"HERALD_HTTP_HEADER_TIMEOUT", "", "`10s`", "reading a request's header block"},
	{"HERALD_HTTP_CAP_HEADER_TIMEOUT", "", "`2s`", "at `HERALD_MAX_CONNS`, a connection that has not sent a whole request this long after it opened is closed to make room (silent sockets cannot lock clients out)"},
	{"HERALD_INTERNAL_ADDR", "", "empty = `HERALD_HTTP_ADDR`", "own listener for `POST /v1/deliver`, then no longer served on the public address"},
	{"HERALD_LOG_LEVEL", "", "`info`", "`debug`, `info`, `warn` or `error`; logs are JSON lines on stderr"},
	{"HERALD_PPROF_ADDR", "", "empty = off", "serves `net/http/pprof` on this address (a listener of its own; never expose it)"},
	{"HERALD_RUN_RETENTION", "", "`720h`", "a run finished longer ago leaves the event log and the read models in the background (then `GET` of it is 404 `run_not_found`); `0` keeps every run (docs/operations.md, Retention)"},
	{"HERALD_CRON_MIN_INTERVAL", "", "`1m` with `HERALD_NATS_URL`, `1s` embedded", "shortest interval between ticks of a workflow schedule that a sync accepts (422 `schedule_too_frequent`)"},
	{"HERALD_CACHE_MIB", "", "`256`", "memory of the engine's caches (run states with outputs, trigger payloads, digest windows, throttle counts), in MiB of estimated bytes"},
	{"HERALD_ALLOW_PRIVATE_EGRESS", "", "`true` embedded, `false` with `HERALD_NATS_URL`", "lets tenant destinations (Bridge and webhook URLs, SMTP hosts, provider base URLs) reach loopback, private and link-local addresses and Bridges use plain `http`; keep it `false` in production"},
	{"HERALD_TENANT_CONCURRENCY", "", "half of `HERALD_WORKERS` (at least 1)", "runs one tenant advances at once in a process (1–4096); its further work waits without taking a worker, so other tenants' runs start at once"},
	{"HERALD_RATE_LIMIT", "", "`200`", "API requests per second per tenant (bursts of twice that; `0` = off); over it, 429 `rate_limited` with `Retry-After`"},
	{"HERALD_INBOUND_RATE", "", "`100`", "requests per second per channel on its inbound URL, where providers report deliveries, bounces and opens (bursts of twice that; `0` = off); over it, 429 `rate_limited` with `Retry-After`, which providers retry"},
}

// settingFor returns the setting of env; it panics on a name missing from
// settings, which TestSettings would have caught.
func settingFor(env string) setting {
	for _, s := range settings {
		if s.env == env {
			return s
		}
	}
	panic("settings: no " + env)
}

// flagUsage is the usage line of a serve flag: the setting's meaning and
// its variable.
func flagUsage(env string) string {
	s := settingFor(env)
	return plain(s.meaning) + " (" + s.env + ")"
}

// serveHelp writes `herald serve --help`: every setting, flag or not.
func serveHelp(w io.Writer) {
	fmt.Fprint(w, `Usage: herald serve [flags]

Runs the API, the engine and the projections in one process. Every setting
is a HERALD_* environment variable; some have a flag too. A flag beats the
environment, which beats the default.

`)
	for _, s := range settings {
		head := "  " + s.env
		if s.flag != "" {
			head += ", " + s.flag
		}
		fmt.Fprintf(w, "%s  (default: %s)\n", head, plain(s.def))
		for _, line := range wrap(plain(s.meaning), 72) {
			fmt.Fprintf(w, "      %s\n", line)
		}
	}
}

// plain drops Markdown's code marks.
func plain(md string) string { return strings.ReplaceAll(md, "`", "") }

// wrap breaks text into lines of at most width characters (longer words
// stay whole).
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		if line != "" && len(line)+1+len(word) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
