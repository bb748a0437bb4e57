package projections

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
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
const ModelsVersion = "3"

// applyFunc applies one event to the read models inside tx.
type applyFunc func(tx *bolt.Tx, ev eventlog.Event) error

// decoded is the applyFunc of apply, which takes the event's data decoded
// as D.
func decoded[D any](apply func(tx *bolt.Tx, ev eventlog.Event, d D) error) applyFunc {
	return func(tx *bolt.Tx, ev eventlog.Event) error {
		var d D
		if err := ev.Decode(&d); err != nil {
			return err
		}
		return apply(tx, ev, d)
	}
}

// Store is the bbolt file of read models. Reads are safe for concurrent
// use; only the projector (Run, ApplyBatch) writes.
type Store struct {
	// dbMu guards db against compact, which swaps the file: reads and
	// the projector's writes hold it shared.
	dbMu     sync.RWMutex
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

	// endpointsGen counts the applied batches that created or deleted a
	// webhook endpoint (see EndpointsGeneration).
	endpointsGen atomic.Uint64

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
	// much more delay before a write is visible. An idle log adds no delay.
	// Zero: 1ms; negative: no waiting.
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
		opts.BatchLinger = time.Millisecond
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

// openDB opens the file and checks it unless it was closed cleanly. The
// free list is kept in the file (bbolt's default): without it every open
// walks every page to find the free ones. bbolt panics on some corrupt
// pages (an invalid free list page): such a panic is an error here.
func openDB(path string) (db *bolt.DB, err error) {
	defer func() {
		if p := recover(); p != nil {
			if db != nil {
				closeQuietly(db)
			}
			db, err = nil, fmt.Errorf("projections: open %s: %w: %v", path, ErrCorrupt, p)
		}
	}()
	db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second, NoSync: true,
		FreelistType: bolt.FreelistMapType})
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

// Applied returns the last applied stream sequence.
func (s *Store) Applied() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.applied
}

// ApplyBatch applies events in one transaction and moves the checkpoint to
// the last one. Events at or below the checkpoint are skipped, so a
// redelivered batch is harmless. An event the read models cannot decode
// is logged and skipped: one bad record must not stop every projection.
func (s *Store) ApplyBatch(evs []eventlog.Event) error {
	if len(evs) == 0 {
		return nil
	}
	var last uint64
	erased, endpoints := false, false
	var runs runFold
	s.dbMu.RLock()
	err := s.guarded(func() error {
		return s.db.Update(func(tx *bolt.Tx) error {
			cp := checkpoint(tx)
			last = cp
			runs = runFold{cache: &s.runs}
			for _, ev := range evs {
				if ev.Seq <= cp {
					continue
				}
				var err error
				switch ev.Type {
				case events.SubscriberErased:
					erased = true
				case events.WebhookCreated, events.WebhookDeleted:
					endpoints = true
				}
				if runEventTypes[ev.Type] {
					err = runs.apply(tx, ev)
				} else if h := s.handlers[ev.Type]; h != nil {
					err = h(tx, ev)
				}
				if err != nil {
					s.log.Error("projection skipped an event it cannot apply",
						"seq", ev.Seq, "type", ev.Type, "tenant", ev.TenantID, "err", err)
				}
				last = ev.Seq
			}
			if err := runs.flush(tx); err != nil {
				return err
			}
			var b [8]byte
			binary.BigEndian.PutUint64(b[:], last)
			return tx.Bucket(bucketMeta).Put(keyCheckpoint, b[:])
		})
	})
	s.dbMu.RUnlock()
	if err != nil {
		return fmt.Errorf("projections: apply: %w", err)
	}
	runs.committed()
	if erased {
		// Before the erase is visible as applied: a caller waiting for it
		// finds the file already free of the subscriber's data.
		if err := s.compact(); err != nil {
			return err
		}
	}
	if endpoints {
		s.endpointsGen.Add(1)
	}
	s.mu.Lock()
	if last > s.applied && !s.closed {
		s.applied = last
		close(s.changed)
		s.changed = make(chan struct{})
	}
	s.mu.Unlock()
	return nil
}

func checkpoint(tx *bolt.Tx) uint64 {
	v := tx.Bucket(bucketMeta).Get(keyCheckpoint)
	if len(v) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

// ErrWaitTimeout is WaitFor's error when the event it waits for was not
// applied within Options.MaxWait. It wraps context.DeadlineExceeded: an API
// request that meets it answers 503, a worker gives its message back.
var ErrWaitTimeout = fmt.Errorf("projections: event not applied in time (projector stalled?): %w", context.DeadlineExceeded)

// WaitFor blocks until the event at seq (and every one before it) is
// applied, ctx ends, or Options.MaxWait passes (ErrWaitTimeout).
func (s *Store) WaitFor(ctx context.Context, seq uint64) error {
	var bound <-chan time.Time
	registered := false
	defer func() {
		if registered {
			s.mu.Lock()
			s.removeWaiter(seq)
			s.mu.Unlock()
		}
	}()
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return ErrClosed
		}
		if s.applied >= seq {
			s.mu.Unlock()
			return nil
		}
		if !registered {
			s.addWaiter(seq)
			registered = true
		}
		ch := s.changed
		s.mu.Unlock()
		if bound == nil {
			t := time.NewTimer(s.opts.MaxWait)
			defer t.Stop()
			bound = t.C
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("projections: waiting for #%d (at #%d): %w", seq, s.Applied(), ctx.Err())
		case <-bound:
			return fmt.Errorf("waiting %v for #%d (at #%d): %w", s.opts.MaxWait, seq, s.Applied(), ErrWaitTimeout)
		}
	}
}

// addWaiter notes a WaitFor blocked until seq is applied; s.mu is held.
func (s *Store) addWaiter(seq uint64) {
	if s.waiting == nil {
		s.waiting = make(map[uint64]int)
	}
	s.waiting[seq]++
	if s.minWaiting == 0 || seq < s.minWaiting {
		s.minWaiting = seq
	}
	select {
	case s.nudge <- struct{}{}:
	default:
	}
}

// removeWaiter undoes addWaiter; s.mu is held.
func (s *Store) removeWaiter(seq uint64) {
	if s.waiting[seq]--; s.waiting[seq] > 0 {
		return
	}
	delete(s.waiting, seq)
	if seq == s.minWaiting {
		s.minWaiting = 0
		for w := range s.waiting {
			if s.minWaiting == 0 || w < s.minWaiting {
				s.minWaiting = w
			}
		}
	}
}

// awaited reports whether a WaitFor waits for an event at or below seq:
// the projector then applies what it holds at once (see Options.BatchLinger).
func (s *Store) awaited(seq uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.minWaiting != 0 && s.minWaiting <= seq
}

// Run follows the log from the checkpoint and applies events until ctx
// ends. ready is closed once the store has caught up with the stream's last
// sequence as of the start (nil is allowed).
func (s *Store) Run(ctx context.Context, log *eventlog.Log, ready chan<- struct{}) error {
	target, err := log.LastSeq(ctx)
	if err != nil {
		return err
	}
	tail, err := log.Tail(ctx, eventlog.TailOptions{After: s.Applied(), Logger: s.log, Restarted: s.opts.TailRestarted})
	if err != nil {
		return err
	}
	defer tail.Stop()
	go s.watchStall(ctx, log)
	signalled := false
	signal := func() {
		if !signalled && ready != nil && s.Applied() >= target {
			close(ready)
			signalled = true
		}
	}
	signal()
	batches := tail.Batches(s.linger, s.awaited, s.nudge)
	outer := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.corrupt:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		evs, err := batches.Next(ctx, 2048)
		if s.isCorrupt() {
			return fmt.Errorf("projections: %s: %w", s.path, ErrCorrupt)
		}
		if err != nil {
			if outer.Err() != nil {
				return nil
			}
			return err
		}
		if err := s.ApplyBatch(evs); err != nil {
			return err
		}
		signal()
	}
}

// Stalled reports whether the projector has applied nothing for
// Options.StallAfter while the stream holds events it has not applied.
func (s *Store) Stalled() bool { return s.stalled.Load() }

// watchStall sets and clears stalled while Run runs, with a log line at
// each change: a stalled projector is never silent.
func (s *Store) watchStall(ctx context.Context, log *eventlog.Log) {
	tick := time.NewTicker(max(s.opts.StallAfter/10, 10*time.Millisecond))
	defer tick.Stop()
	defer s.stalled.Store(false)
	applied, since := s.Applied(), time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if a := s.Applied(); a != applied {
			applied, since = a, time.Now()
			if s.stalled.CompareAndSwap(true, false) {
				s.log.Info("projector applying again", "applied", a)
			}
			continue
		}
		if s.stalled.Load() || time.Since(since) < s.opts.StallAfter {
			continue
		}
		try, cancel := context.WithTimeout(ctx, s.opts.StallAfter/2)
		last, err := log.LastSeq(try)
		cancel()
		if err != nil || last <= applied {
			since = time.Now() // nothing to apply, or no answer: look again later
			continue
		}
		s.stalled.Store(true)
		s.log.Error("projector stalled: the stream holds events it does not apply", "applied", applied,
			"last", last, "for", time.Since(since).Round(time.Second))
	}
}

// Checksum returns a SHA-256 over every read model's keys and values (the
// checkpoint excluded): two stores that applied the same events have the
// same checksum.
func (s *Store) Checksum() (string, error) {
	h := sha256.New()
	err := s.view(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			if bytes.Equal(name, bucketMeta) {
				return nil
			}
			fmt.Fprintf(h, "bucket %q\n", name)
			return hashBucket(h, b)
		})
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func hashBucket(h interface{ Write([]byte) (int, error) }, b *bolt.Bucket) error {
	return b.ForEach(func(k, v []byte) error {
		if v == nil {
			fmt.Fprintf(h, "sub %q\n", k)
			return hashBucket(h, b.Bucket(k))
		}
		fmt.Fprintf(h, "%q=%q\n", k, v)
		return nil
	})
}

// key builds a tenant-scoped key: tenant, a zero byte, then id. Ids
// never contain a zero byte (they are validated printable text).
func key(tenant, id string) []byte {
	k := make([]byte, 0, len(tenant)+1+len(id))
	k = append(k, tenant...)
	k = append(k, 0)
	return append(k, id...)
}

func putJSON(b *bolt.Bucket, k []byte, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.Put(k, data)
}

func getJSON(b *bolt.Bucket, k []byte, v any) (bool, error) {
	data := b.Get(k)
	if data == nil {
		return false, nil
	}
	return true, json.Unmarshal(data, v)
}

// updateJSON changes the JSON value at k of b, if there is one.
func updateJSON[T any](b *bolt.Bucket, k []byte, change func(*T)) error {
	var v T
	if ok, err := getJSON(b, k, &v); err != nil || !ok {
		return err
	}
	change(&v)
	return putJSON(b, k, v)
}

// getOne reads the JSON value at k of bucket, or returns ErrNotFound.
func getOne[T any](s *Store, bucket, k []byte) (T, error) {
	var v T
	err := s.view(func(tx *bolt.Tx) error { return mustGet(tx.Bucket(bucket), k, &v) })
	return v, err
}

// listJSON lists a page of tenant's JSON values of bucket, in key order.
func listJSON[T any](s *Store, bucket []byte, tenant string, p Page) (rows []T, next string, err error) {
	err = s.view(func(tx *bolt.Tx) error {
		rows, next, err = listTenant(tx.Bucket(bucket), tenant, p, decodeJSON[T])
		return err
	})
	return rows, next, err
}

// appendFill is the fill of the pages of buckets whose keys mostly grow.
const appendFill = 0.9

// appendBucket returns a bucket of tx for writing rows whose keys mostly
// grow (stream sequences, time-ordered ids, the sorted subscribers of one
// fan-out or of a bulk import): its pages split at 90% full instead of
// bbolt's 50%, since a page left half full by an append is never filled
// again. The file, the pages a commit writes and the pages a walk over the
// rows maps (a fan-out reads every recipient's row) shrink by almost half.
func appendBucket(tx *bolt.Tx, name []byte) *bolt.Bucket {
	b := tx.Bucket(name)
	b.FillPercent = appendFill
	return b
}

// view runs fn in a read transaction.
func (s *Store) view(fn func(tx *bolt.Tx) error) error {
	s.dbMu.RLock()
	defer s.dbMu.RUnlock()
	return s.guarded(func() error { return s.db.View(fn) })
}

// guarded runs fn, a transaction on s.db (s.dbMu held). A panic in it
// that bbolt's consistency check confirms as a damaged file becomes an
// error wrapping ErrCorrupt and marks the store corrupt (see Store.corrupt);
// any other panic goes on.
func (s *Store) guarded(fn func() error) (err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		cerr := recovering(func() error {
			return s.db.View(func(tx *bolt.Tx) error {
				for err := range tx.Check() {
					return err
				}
				return nil
			})
		})
		if cerr == nil {
			panic(r)
		}
		s.log.Error("projection file corrupt; stopping, it is rebuilt at the next start",
			"path", s.path, "panic", fmt.Sprint(r), "check", cerr)
		s.corruptOnce.Do(func() { close(s.corrupt) })
		err = fmt.Errorf("%w: %v", ErrCorrupt, r)
	}()
	return fn()
}

// recovering runs fn, turning a panic into an error wrapping ErrCorrupt.
func recovering(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrCorrupt, r)
		}
	}()
	return fn()
}

func (s *Store) isCorrupt() bool {
	select {
	case <-s.corrupt:
		return true
	default:
		return false
	}
}
