package projections

import (
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/eventlog"
	bolt "go.etcd.io/bbolt"
)

var (
	bucketMeta    = []byte("meta")
	keyCheckpoint = []byte("checkpoint")
	// keyClean is set by Close and removed by Open: a file that has it was
	// closed cleanly and synced, and is not checked page by page again.
	keyClean = []byte("closed-cleanly")
	// keyStream holds the eventlog.Identity ID of the stream the file was
	// made from (see Options.Stream).
	keyStream = []byte("stream")
	// keyModels holds the ModelsVersion the file's read models were built
	// by: a file built by another version is rebuilt from the log.
	keyModels = []byte("models")
)

// ModelsVersion names the shape of the read models. Change it with any
// change a file built before cannot serve (a new index, a new field
// filled from old events): Open then rebuilds such a file from the log.
const ModelsVersion = "9"

// Store is the bbolt file of read models. Reads are safe for concurrent
// use; only the projector (Run, ApplyBatch) writes.
type Store struct {
	// dbMu guards db against compact, which swaps the file: reads and
	// the projector's writes hold it shared.
	dbMu sync.RWMutex
	// applyMu orders the projector's batches and retention's deletions
	// (ForgetRuns, ForgetTransactions): a batch never writes back a row
	// that retention dropped meanwhile from its cache or its reads.
	applyMu  sync.Mutex
	db       *bolt.DB
	path     string
	log      *slog.Logger
	handlers map[string]applyFunc
	buckets  [][]byte

	mu      sync.Mutex
	applied uint64
	changed chan struct{} // closed and replaced whenever applied moves
	closed  bool

	// corrupt is closed when a read or a write found the file damaged:
	// Run stops with ErrCorrupt, and Close moves the file aside instead of
	// marking it clean, so the next Open rebuilds it.
	corrupt     chan struct{}
	corruptOnce sync.Once

	lastMark markCache
	// runs are the run states the projector wrote last (see runFold).
	runs   runCache
	linger time.Duration
	// waiting counts the WaitFor calls blocked per sequence; minWaiting is
	// the lowest of those sequences (0: none). Guarded by mu.
	waiting    map[uint64]int
	minWaiting uint64
	nudge      chan struct{} // a WaitFor started waiting (capacity 1)
	// ahead is what Run's tail received and the store has not applied,
	// by tenant (see WaitForTenant).
	ahead ahead

	// endpointsGen counts the applied batches that created or deleted a
	// webhook endpoint (see EndpointsGeneration).
	endpointsGen atomic.Uint64
	// bridges, apiKeys and channels keep the rows read for every Bridge
	// call, every API request and every send decoded, until a batch
	// applies a Bridge registration, a key's creation or revocation, or a
	// change of a channel.
	bridges  genCache[BridgeBinding]
	apiKeys  genCache[APIKey]
	channels genCache[[]Channel]
	// cancels keeps the cancelled transactions while they are few (see
	// TransactionCancelled).
	cancels genCache[map[string]string]
	// subscribers keeps the subscribers read last decoded (a send reads
	// its recipient for its Bridge call and again for its decision),
	// until a batch applies an event that writes a subscriber's row
	// (subscriberRowEvents).
	subscribers genCache[Subscriber]

	opts Options
	// stalled is set while Run applies nothing although the stream holds
	// events it has not applied (see Options.StallAfter).
	stalled atomic.Bool
}

// Options configure Open. The zero value of each field is documented.
type Options struct {
	// Logger receives the projector's logs. Zero: slog.Default().
	Logger *slog.Logger
	// BatchLinger is how long Run, while events keep coming, waits after
	// the first event of a batch for more before it applies them in one
	// transaction (see eventlog.Tail.Batches): a busy log costs one commit
	// per many events instead of one per event or two, for at most this
	// much more delay before a write is visible. An idle log adds no delay,
	// and a reader waiting for its own write (WaitFor) ends the batch at
	// it. Zero: 16ms (at 1ms, the commits of batches of a few events cost
	// single triggers about a tenth more serve CPU than at 4ms, and a
	// broadcast's runs about 5% more at 4ms than at 16ms, while another
	// tenant's sends, which wait for their own writes, are not held up:
	// BENCHMARKS.md); negative: no waiting.
	BatchLinger time.Duration
	// Stream, when its ID is set, binds the file to one instance of the
	// EVENTS stream. A file made from another instance (the store was
	// wiped or replaced), or whose checkpoint is beyond Stream.LastSeq,
	// describes a log that is gone: it is moved aside (path +
	// ".stale-<unix seconds>") and replaced by an empty one, to be rebuilt
	// by Run. A file with no record of its stream (a new one, or one made
	// before the record existed) takes Stream.ID. Zero: not checked.
	Stream eventlog.Identity
	// MaxWait bounds each WaitFor: a caller waiting longer for an event to
	// be applied gets ErrWaitTimeout rather than holding its worker or
	// request while the projector is stalled. Zero: 30s.
	MaxWait time.Duration
	// StallAfter is how long Run may apply nothing while the stream holds
	// events it has not applied before the store reports itself stalled
	// (Stalled, a log line); it reports itself well again once it
	// applies. Zero: 30s.
	StallAfter time.Duration
	// Tail receives the projector's tail's consumer restarts (see
	// eventlog.TailOptions.Restarted): a metrics hook. Zero: none.
	TailRestarted func()
}

// Open opens the projection file at path, creating it when missing. A file
// that cannot be opened, that makes bbolt panic while it is opened, or that
// was not closed cleanly (a crash) and fails bbolt's consistency check, is
// moved aside (path + ".corrupt") and replaced by an empty one, to be
// rebuilt from the log by Run; so is a file of another stream (see
// Options.Stream). The check reads the whole file, so a file Close left
// behind is not checked again: opening it reads only what it touches,
// whatever its size.
func Open(path string, opts Options) (*Store, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.BatchLinger == 0 {
		opts.BatchLinger = 16 * time.Millisecond
	}
	if opts.MaxWait == 0 {
		opts.MaxWait = 30 * time.Second
	}
	if opts.StallAfter == 0 {
		opts.StallAfter = 30 * time.Second
	}
	s := &Store{path: path, log: opts.Logger, changed: make(chan struct{}), linger: opts.BatchLinger,
		nudge: make(chan struct{}, 1), corrupt: make(chan struct{}), opts: opts}
	s.handlers, s.buckets = readModels()
	db, err := openDB(path)
	if err != nil {
		s.log.Warn("projection file unusable, rebuilding from the event log", "path", path, "err", err)
		if db, err = replace(path, ".corrupt"); err != nil {
			return nil, err
		}
	}
	if why := staleFor(db, opts.Stream); why != "" {
		db.Close()
		s.log.Warn("projection file stale, rebuilding it from the event log",
			"path", path, "why", why, "stream", opts.Stream.ID)
		if db, err = replace(path, fmt.Sprintf(".stale-%d", time.Now().Unix())); err != nil {
			return nil, err
		}
	}
	s.db = db
	if err := db.Update(func(tx *bolt.Tx) error {
		for _, b := range append([][]byte{bucketMeta}, s.buckets...) {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		s.applied = checkpoint(tx)
		if err := tx.Bucket(bucketMeta).Put(keyModels, []byte(ModelsVersion)); err != nil {
			return err
		}
		if opts.Stream.ID != "" {
			if err := tx.Bucket(bucketMeta).Put(keyStream, []byte(opts.Stream.ID)); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketMeta).Delete(keyClean)
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("projections: init %s: %w", path, err)
	}
	return s, nil
}

// replace moves the file at path aside (path + suffix) and opens an empty
// one in its place.
func replace(path, suffix string) (*bolt.DB, error) {
	if err := os.Rename(path, path+suffix); err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("projections: move aside %s: %w", path, err)
	}
	return openDB(path)
}

// staleFor says why the file in db does not describe the stream id, or ""
// when it does (or id is not set, or the file records no stream).
func staleFor(db *bolt.DB, id eventlog.Identity) (why string) {
	_ = db.View(func(tx *bolt.Tx) error {
		m := tx.Bucket(bucketMeta)
		if m == nil {
			return nil
		}
		if v := m.Get(keyModels); checkpoint(tx) > 0 && string(v) != ModelsVersion {
			why = fmt.Sprintf("read models of version %q, this herald builds version %q", v, ModelsVersion)
		} else if id.ID == "" {
			return nil
		} else if v := m.Get(keyStream); v != nil && string(v) != id.ID {
			why = fmt.Sprintf("made from stream %s", v)
		} else if cp := checkpoint(tx); cp > id.LastSeq {
			why = fmt.Sprintf("checkpoint %d is beyond the stream's last sequence %d", cp, id.LastSeq)
		}
		return nil
	})
	return why
}

// openDB opens the file, and checks it page by page unless it was closed
// cleanly.
//
// The free list is not kept in the file (NoFreelistSync): every commit
// would write all of it, and once retention frees pages the list is long.
// Under 100 runs a second at a 10-minute retention, writing it took a
// quarter of herald serve's CPU, and the file grew by half again around
// the pages it was written to (BENCHMARKS.md, "Retention under a steady
// load"). An open finds the free pages by walking every page instead
// (0.2–0.5 s for 500 MB, with walkPages). bbolt walks them in a goroutine of its own,
// where a damaged page would panic the process, so walkPages reads them
// all first, here, where a panic is an error: a damaged page is found at
// open, whether or not the file was closed cleanly.
func openDB(path string) (db *bolt.DB, err error) {
	if damaged, err := walkPages(path); err != nil {
		return nil, fmt.Errorf("projections: open %s: %w", path, err)
	} else if damaged != nil {
		return nil, fmt.Errorf("projections: open %s: %w: %v", path, ErrCorrupt, damaged)
	}
	defer func() {
		if p := recover(); p != nil {
			if db != nil {
				closeQuietly(db)
			}
			db, err = nil, fmt.Errorf("projections: open %s: %w: %v", path, ErrCorrupt, p)
		}
	}()
	db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second, NoSync: true,
		NoFreelistSync: true, PreLoadFreelist: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return nil, fmt.Errorf("projections: open %s: %w", path, err)
	}
	if err := db.View(func(tx *bolt.Tx) error {
		m := tx.Bucket(bucketMeta)
		if m != nil && m.Get(keyClean) != nil {
			return nil
		}
		for err := range tx.Check() {
			return err
		}
		return nil
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("projections: check %s: %w: %w", path, ErrCorrupt, err)
	}
	return db, nil
}

// walkPages reads every key and value of the file at path (nothing when
// there is no file yet), so every page a bucket reaches, read-only: a
// read-only open loads no free list. damaged is bbolt's panic on a
// damaged page; err is the open's own (a lock not had in time, a file that
// is no database), which the open that follows meets and reports as
// before.
func walkPages(path string) (damaged, err error) {
	if _, serr := os.Stat(path); os.IsNotExist(serr) {
		return nil, nil
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second, ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer closeQuietly(db)
	defer func() {
		if p := recover(); p != nil {
			damaged = fmt.Errorf("%v", p)
		}
	}()
	return db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(_ []byte, b *bolt.Bucket) error { return walkBucket(b) })
	}), nil
}

// walkBucket reads every key and value of b and of the buckets in it.
func walkBucket(b *bolt.Bucket) error {
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if v == nil {
			if nested := b.Bucket(k); nested != nil {
				if err := walkBucket(nested); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// closeQuietly closes a db that may be corrupt, swallowing a panic.
func closeQuietly(db *bolt.DB) {
	defer func() { _ = recover() }()
	_ = db.Close()
}

// Close closes the file and releases every waiter with ErrClosed. It is
// safe to call more than once.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.changed)
	s.mu.Unlock()
	// Mark the file clean and sync it (writes are not synced one by one):
	// the next Open trusts it without reading it all. A failure only costs
	// that check.
	s.dbMu.Lock()
	defer s.dbMu.Unlock()
	if s.isCorrupt() {
		err := s.db.Close()
		aside := s.path + ".corrupt"
		if rerr := os.Rename(s.path, aside); rerr != nil {
			s.log.Error("corrupt projection file not moved aside", "path", s.path, "err", rerr)
		} else {
			s.log.Warn("corrupt projection file moved aside; the next start rebuilds it", "path", s.path, "moved_to", aside)
		}
		return err
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keyClean, []byte{1})
	})
	if err == nil {
		err = s.db.Sync()
	}
	if err != nil {
		s.log.Warn("projection file not marked clean; the next start checks it", "path", s.path, "err", err)
	}
	return s.db.Close()
}

// StreamID returns the identity of the stream the file was made from (see
// Options.Stream); "" when it records none.
func (s *Store) StreamID() string {
	var id string
	_ = s.view(func(tx *bolt.Tx) error {
		id = string(tx.Bucket(bucketMeta).Get(keyStream))
		return nil
	})
	return id
}

// Path returns the file's path.
func (s *Store) Path() string { return s.path }
