package embedded_test

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/heraldhq/herald/embedded"
)

// A port another listener holds fails Start at once with ErrListen,
// not after ReadyTimeout with ErrNotReady; a free one starts.
func TestStartOnAPortTakenFailsAtOnce(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	port := held.Addr().(*net.TCPAddr).Port
	for _, cfg := range []embedded.Config{
		{StoreDir: t.TempDir(), Listen: true, Port: port, ReadyTimeout: time.Hour},
		{StoreDir: t.TempDir(), ServerName: "n1", ReadyTimeout: time.Hour, Cluster: &embedded.Cluster{Name: "c", Port: port}},
	} {
		done := make(chan error, 1)
		go func() {
			srv, err := embedded.Start(cfg)
			if err == nil {
				srv.Shutdown()
			}
			done <- err
		}()
		// The hour is the test's guard: Start answers long before.
		select {
		case err := <-done:
			if !errors.Is(err, embedded.ErrListen) {
				t.Fatalf("port %d taken: %v, want ErrListen", port, err)
			}
		case <-time.After(5 * time.Minute):
			t.Fatal("Start waited for a listener that cannot come")
		}
	}
	srv, err := embedded.Start(embedded.Config{StoreDir: t.TempDir(), Listen: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Shutdown()
}
