package testnats

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/heraldhq/herald/embedded"
	"github.com/heraldhq/herald/internal/testnet"
	"github.com/nats-io/nats.go/jetstream"
)

// Cluster is a JetStream route cluster of embedded servers on loopback,
// each with fixed client and route ports and a store of its own, so that a
// stopped node can be started again as the same member.
type Cluster struct {
	tb    testing.TB
	Nodes []*embedded.Server
	// URLs are the nodes' client URLs, in node order.
	URLs []string
	cfgs []embedded.Config
	// routes are the nodes' route ports, in node order (0: not picked yet).
	routes []int
	down   []bool
}

// StartCluster starts an n-node cluster and waits until every node's
// JetStream is current (the meta group has a leader). t.Cleanup stops the
// nodes.
func StartCluster(tb testing.TB, n int) *Cluster {
	tb.Helper()
	c := &Cluster{tb: tb, Nodes: make([]*embedded.Server, n), down: make([]bool, n),
		routes: make([]int, n), URLs: make([]string, n)}
	for i := range n {
		// ReadyTimeout guards against a hang only: a node of a cluster
		// started beside other tests' took over the default 10 s.
		c.cfgs = append(c.cfgs, embedded.Config{StoreDir: filepath.Join(tb.TempDir(), "js"), ServerName: fmt.Sprintf("n%d", i+1),
			ReadyTimeout: readyGuard, Listen: true, Cluster: &embedded.Cluster{Name: "herald-test"}})
		c.pickPorts(i)
	}
	for i := range n {
		for attempt := 1; ; attempt++ {
			err := c.start(i)
			if err == nil {
				break
			}
			// A port picked free can be taken before the node binds it (an
			// outgoing connection's local port, under load): new ones,
			// which the nodes started after it and any restart route to.
			if !errors.Is(err, embedded.ErrListen) || attempt == 5 {
				tb.Fatalf("node %s: %v", c.cfgs[i].ServerName, err)
			}
			c.pickPorts(i)
		}
	}
	c.WaitReady(30 * time.Second)
	return c
}

// pickPorts gives node i a client and a route port, and every node the
// routes to the others.
func (c *Cluster) pickPorts(i int) {
	c.cfgs[i].Port, c.routes[i] = testnet.FreePort(c.tb), testnet.FreePort(c.tb)
	c.cfgs[i].Cluster.Port = c.routes[i]
	c.URLs[i] = fmt.Sprintf("nats://127.0.0.1:%d", c.cfgs[i].Port)
	for j := range c.cfgs {
		var others []string
		for k, p := range c.routes {
			if k != j && p != 0 {
				others = append(others, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
			}
		}
		c.cfgs[j].Cluster.Routes = others
	}
}

// Start starts node i (again, after Stop), on its ports and store.
func (c *Cluster) Start(i int) {
	c.tb.Helper()
	if err := c.start(i); err != nil {
		c.tb.Fatalf("node %s: %v", c.cfgs[i].ServerName, err)
	}
}

// start starts node i on its configuration.
func (c *Cluster) start(i int) error {
	srv, err := embedded.Start(c.cfgs[i])
	if err != nil {
		return err
	}
	c.tb.Cleanup(srv.Shutdown)
	c.Nodes[i], c.down[i] = srv, false
	return nil
}

// Stop stops node i: its clients lose their connection to it.
func (c *Cluster) Stop(i int) {
	c.Nodes[i].Shutdown()
	c.down[i] = true
}

// Index returns the index of the node named name, or -1.
func (c *Cluster) Index(name string) int {
	for i, cfg := range c.cfgs {
		if cfg.ServerName == name {
			return i
		}
	}
	return -1
}

// WaitReady waits until every running node's JetStream is current; it
// fails the test after timeout (a guard against a hang, not a measure).
func (c *Cluster) WaitReady(timeout time.Duration) {
	c.tb.Helper()
	deadline := time.Now().Add(timeout)
	for i, s := range c.Nodes {
		for !c.down[i] && !s.JetStreamReady() {
			if time.Now().After(deadline) {
				c.tb.Fatalf("%s: JetStream cluster not ready", s.Name())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// WaitStreamsCurrent waits until every stream js sees has a leader and
// every replica current and caught up, as an operator waits between the
// restarts of a rolling upgrade: losing another node while a replica still
// catches up is the loss of two, which three replicas do not survive. The
// timeout guards against a hang.
func (c *Cluster) WaitStreamsCurrent(js jetstream.JetStream, timeout time.Duration) {
	c.tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		lagging := ""
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		lister := js.ListStreams(ctx)
		for info := range lister.Info() {
			cl := info.Cluster
			if cl == nil {
				continue
			}
			if cl.Leader == "" || len(cl.Replicas) < info.Config.Replicas-1 {
				lagging = info.Config.Name + ": no leader or replicas missing"
			}
			for _, r := range cl.Replicas {
				if !r.Current || r.Lag > 0 {
					lagging = info.Config.Name + ": replica " + r.Name + " catching up"
				}
			}
		}
		err := lister.Err()
		cancel()
		if err == nil && lagging == "" {
			return
		}
		if time.Now().After(deadline) {
			c.tb.Fatalf("streams not current: %s %v", lagging, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
