package service_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/heraldhq/herald/service"
)

// startEmbedded starts herald serve on dataDir with embedded NATS.
func startEmbedded(t *testing.T, dataDir string) *service.Service {
	t.Helper()
	cfg, err := service.LoadConfig(clusterEnv(), service.Flags{HTTPAddr: "127.0.0.1:0", DataDir: dataDir})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := service.Start(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatalf("herald: %v", err)
	}
	waitReady(t, svc)
	return svc
}

func stop(t *testing.T, svc *service.Service) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := svc.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestProjectionsOfAWipedStoreAreNotTrusted: with the JetStream store
// wiped and projections.db kept, the projections describe a log that is
// gone. They are moved aside and rebuilt from the new (empty) log: old API
// keys no longer authenticate, tenants can be created, and acknowledged
// writes are visible.
func TestProjectionsOfAWipedStoreAreNotTrusted(t *testing.T) {
	dir := t.TempDir()
	admin := clusterEnv()("HERALD_ADMIN_TOKEN")
	svc := startEmbedded(t, dir)
	var old struct{ TenantID, APIKey string }
	json.Unmarshal(mustCall(t, svc.URL(), "POST", "/v1/admin/tenants", admin, map[string]string{"name": "Before"}, 201), &old)
	mustCall(t, svc.URL(), "PUT", "/v1/subscribers/u1", old.APIKey, map[string]any{"locale": "en"}, 201)
	stop(t, svc)

	if err := os.RemoveAll(filepath.Join(dir, service.NATSDir)); err != nil {
		t.Fatal(err)
	}
	svc = startEmbedded(t, dir)
	defer stop(t, svc)
	if st, body, err := call(svc.URL(), "GET", "/v1/subscribers/u1", old.APIKey, nil); err != nil || st != 401 {
		t.Fatalf("a key of the wiped log still authenticates: %d %s %v", st, body, err)
	}
	var fresh struct{ TenantID, APIKey string }
	json.Unmarshal(mustCall(t, svc.URL(), "POST", "/v1/admin/tenants", admin, map[string]string{"name": "After"}, 201), &fresh)
	mustCall(t, svc.URL(), "PUT", "/v1/subscribers/u2", fresh.APIKey, map[string]any{"locale": "de"}, 201)
	var sub struct{ Locale string }
	json.Unmarshal(mustCall(t, svc.URL(), "GET", "/v1/subscribers/u2", fresh.APIKey, nil, 200), &sub)
	if sub.Locale != "de" {
		t.Fatalf("acknowledged write not visible: %+v", sub)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, service.ProjectionsFile+".stale-*")); len(m) != 1 {
		t.Fatalf("the stale projections were not moved aside: %v", m)
	}
}
