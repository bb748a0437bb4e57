package bench

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/testchild"
)

// A port picked free can be taken before the child binds it. startServer
// must then not take whatever answers on that port for its child: here a
// server that answers /readyz 200 and refuses the admin token, as another
// herald serve does, holds the first port it picks. The child, failing to
// bind, is started again on another port, and the server returned is it.
func TestStartServerIsNotFooledByAnotherProcessOnItsPort(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a herald serve process")
	}
	foreign := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			w.Write([]byte(`{"status":"ready"}`))
			return
		}
		http.Error(w, `{"error":{"code":"unauthorized"}}`, http.StatusUnauthorized)
	}))
	defer foreign.Close()
	taken := strings.TrimPrefix(foreign.URL, "http://")
	picks := 0
	apiAddr = func() (string, error) {
		if picks++; picks == 1 {
			return taken, nil
		}
		return freeAddr()
	}
	defer func() { apiAddr = freeAddr }()
	dir := t.TempDir()
	o := serveOptions{dataDir: filepath.Join(dir, "data"), logPath: filepath.Join(dir, "serve.log"), sync: SyncInterval,
		adminToken: "hadm_test_" + strings.Repeat("x", 20)}
	s, err := startServer(context.Background(), Config{ServeCommand: func() *exec.Cmd { return testchild.Command() }}, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.stop()
	if s.addr == taken || picks != 2 {
		t.Fatalf("the server is at %s after %d picks; the foreign one is at %s", s.addr, picks, taken)
	}
	if !s.ready(o.adminToken) {
		t.Fatalf("the server at %s does not take its admin token", s.addr)
	}
}
