package engine_test

import (
	"context"
	"flag"
	"net/http"
	"os"
	"sort"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

var runBytesN = flag.Int("runbytes.n", 10000, "runs of BenchmarkFinishedRunBytes")

// BenchmarkFinishedRunBytes measures what a finished run of the 2-step
// workload (a `run` step, then an email) leaves in the projections: one
// topic trigger to runbytes.n subscribers, every run completed, then the
// projections file is opened read-only and each bucket's pages in use
// (leaf and branch, bbolt's own stats: the bytes in use, and the pages
// they take) are divided by the runs, and so is the file's size. The audience
// buckets (subscribers, topics) are the set-up's, not a run's: they are
// reported apart and left out of the total.
func BenchmarkFinishedRunBytes(b *testing.B) {
	n := *runBytesN
	for i := 0; i < b.N; i++ {
		h, _, tenant, key := startTwoStep(b, n, nil)
		lastSeq = 0
		r := h.Do("POST", "/v1/events", key, map[string]any{"workflowId": "two", "to": map[string]any{"topics": []string{"all"}}})
		if r.Status != http.StatusAccepted {
			b.Fatalf("trigger: %d %s", r.Status, r.Body)
		}
		waitCompleted(b, h, tenant, n)
		// The runs' last events (their deliveries' too) are projected.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := h.Store().WaitCaughtUp(ctx, h.Log()); err != nil {
			b.Fatal(err)
		}
		cancel()
		path := h.Store().Path()
		h.Stop()
		db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		audience := map[string]bool{"subscribers": true, "topics": true, "topic_members": true, "subscriber_topics": true}
		type usage struct {
			name              string
			keys, used, alloc int
		}
		var all []usage
		total, totalAlloc := 0, 0
		if err := db.View(func(tx *bolt.Tx) error {
			return tx.ForEach(func(name []byte, bk *bolt.Bucket) error {
				st := bk.Stats()
				u := usage{string(name), st.KeyN, st.LeafInuse + st.BranchInuse, st.LeafAlloc + st.BranchAlloc}
				all = append(all, u)
				if !audience[u.name] {
					total += u.used
					totalAlloc += u.alloc
				}
				return nil
			})
		}); err != nil {
			b.Fatal(err)
		}
		_ = db.Close()
		fi, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		sort.Slice(all, func(i, j int) bool { return all[i].used > all[j].used })
		for _, u := range all {
			if u.used > 0 {
				b.Logf("%-26s %6d keys %9d B in use %7.1f B/run, pages %7.1f B/run", u.name, u.keys, u.used,
					float64(u.used)/float64(n), float64(u.alloc)/float64(n))
			}
		}
		b.ReportMetric(float64(total)/float64(n), "B/run")
		b.ReportMetric(float64(totalAlloc)/float64(n), "page-B/run")
		b.ReportMetric(float64(fi.Size())/float64(n), "file-B/run")
	}
}
