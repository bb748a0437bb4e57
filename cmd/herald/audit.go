package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/service"
)

// auditCmd replays the event log as JSON lines on stdout. With
// HERALD_NATS_URL it reads the cluster's streams directly; in embedded
// mode it opens the data dir's store when no server runs on it, and asks
// the running server (GET /v1/admin/events) when one does.
func auditCmd(fs *flag.FlagSet) action {
	var (
		f            eventlog.Filter
		since, types string
		flags        service.Flags
	)
	fs.StringVar(&f.Tenant, "tenant", "", "only this tenant's events")
	fs.StringVar(&since, "since", "", "only events at or after this RFC 3339 instant")
	fs.StringVar(&types, "type", "", "only events of this type (comma-separated for several)")
	fs.BoolVar(&f.Follow, "follow", false, "keep printing new events until interrupted")
	configFlags(fs, &flags)
	return func(ctx context.Context, _ []string, stdout, _ io.Writer) error {
		return audit(ctx, f, since, types, flags, stdout)
	}
}

func audit(ctx context.Context, f eventlog.Filter, since, types string, flags service.Flags, stdout io.Writer) error {
	if since != "" {
		t, err := time.Parse(time.RFC3339Nano, since)
		if err != nil {
			return badUsage("--since: %q is not an RFC 3339 instant", since)
		}
		f.Since = t
	}
	for _, t := range strings.Split(types, ",") {
		if t = strings.TrimSpace(t); t != "" {
			f.Types = append(f.Types, t)
		}
	}
	if err := f.Validate(); err != nil {
		return fmt.Errorf("--tenant: %w", err)
	}
	cfg, err := toolConfig(flags)
	if err != nil {
		return err
	}
	out := &lineWriter{w: bufio.NewWriterSize(stdout, 64<<10), flushEach: f.Follow}
	defer out.w.Flush()

	o, err := service.OpenOffline(ctx, cfg, false)
	if errors.Is(err, service.ErrDataDirInUse) {
		return auditThroughServer(ctx, cfg, f, out)
	}
	if err != nil {
		return err
	}
	defer o.Close()
	err = o.Log.Replay(ctx, f, func(ev eventlog.Event) error {
		line, err := ev.MarshalLine()
		if err != nil {
			return err
		}
		return out.line(line)
	})
	if f.Follow && ctx.Err() != nil {
		return nil // interrupted: the normal end of --follow
	}
	return err
}

// auditThroughServer streams GET /v1/admin/events of the server that holds
// the data dir.
func auditThroughServer(ctx context.Context, cfg service.Config, f eventlog.Filter, out *lineWriter) error {
	token, err := adminToken(cfg)
	if err != nil {
		return err
	}
	q := url.Values{}
	if f.Tenant != "" {
		q.Set("tenant", f.Tenant)
	}
	if !f.Since.IsZero() {
		q.Set("since", f.Since.UTC().Format(time.RFC3339Nano))
	}
	if len(f.Types) > 0 {
		q.Set("type", strings.Join(f.Types, ","))
	}
	if f.Follow {
		q.Set("follow", "true")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+cfg.HTTPAddr+"/v1/admin/events?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("a herald process holds %s, but its API on %s does not answer (set --http): %w",
			cfg.DataDir, cfg.HTTPAddr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("GET /v1/admin/events answered %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		if err := out.line(sc.Bytes()); err != nil {
			return err
		}
	}
	if f.Follow && ctx.Err() != nil {
		return nil
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading the server's replay: %w", err)
	}
	if msg := resp.Trailer.Get("Herald-Audit-Error"); msg != "" {
		return fmt.Errorf("server: %s", msg)
	}
	return nil
}

// adminToken is HERALD_ADMIN_TOKEN, or the token file of the data dir.
func adminToken(cfg service.Config) (string, error) {
	if tok := strings.TrimSpace(os.Getenv("HERALD_ADMIN_TOKEN")); tok != "" {
		return tok, nil
	}
	b, err := os.ReadFile(filepath.Join(cfg.DataDir, service.AdminTokenFile))
	if err != nil {
		return "", fmt.Errorf("admin token: set HERALD_ADMIN_TOKEN or run beside the data dir: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// lineWriter writes lines, flushing after each one when following.
type lineWriter struct {
	w         *bufio.Writer
	flushEach bool
}

func (l *lineWriter) line(b []byte) error {
	if _, err := l.w.Write(b); err != nil {
		return err
	}
	if err := l.w.WriteByte('\n'); err != nil {
		return err
	}
	if l.flushEach {
		return l.w.Flush()
	}
	return nil
}
