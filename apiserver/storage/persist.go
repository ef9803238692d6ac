package storage

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Persistence (Options.Dir): a write-ahead log and snapshots, as etcd
// keeps its state; see the package documentation for what is durable when.
//
// The directory holds:
//
//	FORMAT                 "kloop-store format 1": what reads the rest
//	LOCK                   held (flock) by the store that has the directory open
//	wal-<index>.log        log segments: a header, then one record per write
//	snap-<index>.snap      a snapshot of the state before segment <index>
//
// A write appends its record to the newest segment (one write(2), under
// the lock of its resource, before the write is visible to anyone), then
// returns once an fdatasync covers it; concurrent writers share one
// fdatasync (group commit). Once the segments since the last snapshot hold
// Options.SnapshotBytes (or the size of the last snapshot, if larger), a
// snapshot starts a new segment, writes every resource's state and history
// to a new snapshot file, and removes what it replaces. Opening the
// directory loads the newest snapshot and replays the segments after it.

// formatVersion is the version of the files this package reads and writes.
const formatVersion = 1

const (
	formatFile   = "FORMAT"
	lockFile     = "LOCK"
	formatPrefix = "kloop-store format "
	walMagic     = "KLOOPWAL"
	snapMagic    = "KLOOPSNP"
	// fileHeader is the size of a segment's or a snapshot's header: its
	// magic (8 bytes), its format version (4 bytes) and 4 zero bytes.
	fileHeader = 16
)

// reserveBlock is how many revisions one reservation record covers. After
// a restart the store's revision starts at the last reservation, past
// every revision the previous process may have shown a client.
const reserveBlock = 10_000

// DefaultSnapshotBytes is the default of Options.SnapshotBytes.
const DefaultSnapshotBytes = 64 << 20

// disk is the store's files in Options.Dir.
type disk struct {
	dir           string
	lock          *os.File // holds the directory's flock while open
	logger        *slog.Logger
	snapshotBytes int64
	noSync        bool // Options.noSync

	// mu guards the fields from f to buf and is held across each write(2)
	// of a record, so records are appended whole and in the order of their
	// positions. It is taken under a resource's lock, never the reverse.
	mu sync.Mutex
	f  *os.File // the segment appended to
	// seg is f's index; snap is the index of the newest snapshot (0: none).
	seg, snap uint64
	// written is the log position: the bytes appended since open, across
	// segments. A record's position is the one after it.
	written int64
	// since counts the bytes of the segments since the last snapshot,
	// lastSnap the size of that snapshot: a snapshot starts when since
	// reaches max(snapshotBytes, lastSnap).
	since, lastSnap int64
	// err, once set, fails every later write: a write(2) or an fdatasync
	// failed (what the kernel kept is then unknown), or the store closed.
	err    error
	closed bool
	buf    recordBuf // encodes records under mu

	// reserved is the revision up to which revisions may be handed out:
	// a reservation record for it has been written. Raised under mu.
	reserved atomic.Int64

	// syncMu guards synced, syncing, syncErr and syncDone. It is never
	// held with mu.
	syncMu sync.Mutex
	// synced is the position up to which the log is durable.
	synced int64
	// syncing: a writer is running an fdatasync (the group's leader);
	// syncDone is closed when it ends.
	syncing  bool
	syncDone chan struct{}
	syncErr  error

	// due: the log has grown enough for a snapshot; set by appendLocked,
	// reset when a snapshot starts a segment.
	due atomic.Bool
	// snapshotting is set while a snapshot runs; Close waits for it on
	// snapshots.
	snapshotting atomic.Bool
	snapshots    sync.WaitGroup
	// snapshotErr is the last snapshot's error, for tests and logs; guarded by mu.
	snapshotErr error
}

// Errors of the data directory, wrapped with the path and detail.
var (
	// ErrCorrupt: a file of the data directory is damaged.
	ErrCorrupt = errors.New("data directory damaged")
	// ErrInUse: another store has the data directory open.
	ErrInUse = errors.New("data directory in use")
	// ErrNewerFormat: the data directory was written by a newer kloop.
	ErrNewerFormat = errors.New("data directory written by a newer kloop")
	// ErrClosed: the store was closed, or its data directory failed; it
	// takes no more writes.
	ErrClosed = errors.New("store closed")
)

func segmentName(i uint64) string  { return fmt.Sprintf("wal-%016d.log", i) }
func snapshotName(i uint64) string { return fmt.Sprintf("snap-%016d.snap", i) }

// parseIndex parses the index of a segment or snapshot file name.
func parseIndex(name, prefix, suffix string) (uint64, bool) {
	if !strings.HasPrefix(name, prefix) || !strings.HasSuffix(name, suffix) {
		return 0, false
	}
	s := name[len(prefix) : len(name)-len(suffix)]
	if len(s) != 16 {
		return 0, false
	}
	i, err := strconv.ParseUint(s, 10, 64)
	return i, err == nil && i > 0
}

func corrupt(path string, format string, args ...any) error {
	return fmt.Errorf("storage: %s: %w: %s", path, ErrCorrupt, fmt.Sprintf(format, args...))
}

// open opens (or creates) the data directory and loads it into s, which
// is empty.
func (s *Store) open() (err error) {
	dir := s.opts.Dir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("storage: data directory: %w", err)
	}
	d := &disk{dir: dir, logger: s.opts.Logger, snapshotBytes: s.opts.SnapshotBytes, noSync: s.opts.noSync, syncDone: make(chan struct{})}
	if d.lock, err = lockDir(filepath.Join(dir, lockFile)); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			if d.f != nil {
				_ = d.f.Close()
			}
			_ = d.lock.Close()
		}
	}()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("storage: data directory: %w", err)
	}
	var segs, snaps []uint64
	for _, e := range entries {
		if i, ok := parseIndex(e.Name(), "wal-", ".log"); ok {
			segs = append(segs, i)
		} else if i, ok := parseIndex(e.Name(), "snap-", ".snap"); ok {
			snaps = append(snaps, i)
		} else if strings.HasSuffix(e.Name(), ".tmp") {
			_ = os.Remove(filepath.Join(dir, e.Name())) // a snapshot or FORMAT cut short
		}
	}
	slices.Sort(segs)
	slices.Sort(snaps)
	if err := d.checkFormat(len(segs)+len(snaps) > 0); err != nil {
		return err
	}
	if len(snaps) > 0 {
		d.snap = snaps[len(snaps)-1]
		if d.lastSnap, err = s.loadSnapshot(filepath.Join(dir, snapshotName(d.snap))); err != nil {
			return err
		}
	}
	first := max(d.snap, 1)
	var replay []uint64
	for _, i := range segs {
		if i >= first {
			replay = append(replay, i)
		}
	}
	for j, i := range replay {
		if i != first+uint64(j) {
			return corrupt(filepath.Join(dir, segmentName(first+uint64(j))), "log segment missing (the next one is %s)", segmentName(i))
		}
	}
	for j, i := range replay {
		n, err := s.replaySegment(d, filepath.Join(dir, segmentName(i)), j == len(replay)-1)
		if err != nil {
			return err
		}
		d.since += n
	}
	d.reserved.Store(s.rev.Load())
	if len(replay) == 0 {
		if err := d.newSegment(first); err != nil {
			return err
		}
	} else {
		d.seg = replay[len(replay)-1]
		if d.f, err = os.OpenFile(filepath.Join(dir, segmentName(d.seg)), os.O_WRONLY|os.O_APPEND, 0); err != nil {
			return fmt.Errorf("storage: %w", err)
		}
	}
	// What a snapshot replaced but a crash left behind.
	for _, i := range segs {
		if i < first {
			_ = os.Remove(filepath.Join(dir, segmentName(i)))
		}
	}
	for _, i := range snaps[:max(len(snaps)-1, 0)] {
		_ = os.Remove(filepath.Join(dir, snapshotName(i)))
	}
	s.disk = d
	return nil
}

// checkFormat reads FORMAT, or writes it in a new directory.
func (d *disk) checkFormat(hasData bool) error {
	path := filepath.Join(d.dir, formatFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		if hasData {
			return corrupt(path, "missing, but the directory holds a store")
		}
		return d.writeFileSync(path, fmt.Appendf(nil, "%s%d\n", formatPrefix, formatVersion))
	}
	if err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	v, ok := strings.CutPrefix(strings.TrimSpace(string(b)), formatPrefix)
	n, err := strconv.Atoi(v)
	switch {
	case !ok || err != nil:
		return corrupt(path, "not a kloop store format: %.40q", b)
	case n > formatVersion:
		return fmt.Errorf("storage: %s: %w: format %d, this kloop reads format %d", d.dir, ErrNewerFormat, n, formatVersion)
	case n != formatVersion:
		return corrupt(path, "unknown format %d", n)
	}
	return nil
}

// newSegment creates segment i, durably, and makes it the one appended to.
// d.mu is held (or d is not shared yet).
func (d *disk) newSegment(i uint64) error {
	path := filepath.Join(d.dir, segmentName(i))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	if _, err := f.Write(header(walMagic)); err == nil {
		err = d.datasync(f)
	}
	if err == nil {
		err = d.syncDir(d.dir)
	}
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("storage: new log segment: %w", err)
	}
	d.f, d.seg = f, i
	return nil
}

func header(magic string) []byte {
	h := make([]byte, fileHeader)
	copy(h, magic)
	binary.LittleEndian.PutUint32(h[8:], formatVersion)
	return h
}

// checkHeader checks a file's header.
func checkHeader(path string, b []byte, magic string) error {
	if len(b) < fileHeader || string(b[:8]) != magic {
		return corrupt(path, "not a kloop store file")
	}
	if v := binary.LittleEndian.Uint32(b[8:]); v != formatVersion {
		if v > formatVersion {
			return fmt.Errorf("storage: %s: %w: format %d, this kloop reads format %d", path, ErrNewerFormat, v, formatVersion)
		}
		return corrupt(path, "unknown format %d", v)
	}
	return nil
}

// replaySegment applies a segment's records to s and returns its size.
// In the last segment, a record that a crash cut short (it runs past the
// end of the file, or only zeros follow, or the damaged record is the
// file's last) is what a write interrupted by the crash left: it is cut
// off, as etcd repairs its log. Any other damage is an error.
func (s *Store) replaySegment(d *disk, path string, last bool) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("storage: %w", err)
	}
	if last && len(b) < fileHeader {
		// Its creation was cut short by a crash before any record: start
		// it again.
		return 0, os.WriteFile(path, header(walMagic), 0o600)
	}
	if err := checkHeader(path, b, walMagic); err != nil {
		return 0, err
	}
	cutoff := s.opts.Now().Add(-s.opts.HistoryAge)
	end, err := records(b[fileHeader:], func(p []byte, off int) error {
		if err := s.replayRecord(d, p); err != nil {
			return corrupt(path, "record at offset %d: %v", fileHeader+off, err)
		}
		return nil
	})
	if err != nil && errors.Is(err, ErrCorrupt) {
		return 0, err
	}
	end += fileHeader
	if err != nil {
		rest := b[end:]
		torn := errors.Is(err, errTorn) || zeros(rest) || endsAtEOF(rest)
		if !last || !torn {
			return 0, corrupt(path, "record at offset %d: %v", end, err)
		}
		d.logger.Warn("storage: dropping a log record a crash cut short (it was never acknowledged)", "file", path, "offset", end, "bytes", len(rest))
		if err := d.truncateSync(path, int64(end)); err != nil {
			return 0, err
		}
	}
	s.evictAll(cutoff)
	return int64(end), nil
}

// endsAtEOF reports whether the damaged record at the start of b is the
// last of the file: its length, if intact, takes it exactly to the end.
func endsAtEOF(b []byte) bool {
	if len(b) < frameHeader {
		return true
	}
	n := binary.LittleEndian.Uint32(b)
	return int64(n)+frameHeader == int64(len(b))
}

// replayRecord applies one log record.
func (s *Store) replayRecord(d *disk, p []byte) error {
	r := recordReader{b: p[1:]}
	switch tag := p[0]; tag {
	case tagAdded, tagModified, tagDeleted:
		ev := r.event(tag)
		if err := r.end(); err != nil {
			return err
		}
		return s.apply(ev)
	case tagCompact:
		rev := r.rev()
		if err := r.end(); err != nil {
			return err
		}
		s.compactLocked(rev)
		s.rev.Store(max(s.rev.Load(), rev))
	case tagCompactR:
		res, rev := r.string(), r.rev()
		if err := r.end(); err != nil {
			return err
		}
		s.resource(res).compact(s, rev)
		s.rev.Store(max(s.rev.Load(), rev))
	case tagReserve:
		rev := r.rev()
		if err := r.end(); err != nil {
			return err
		}
		s.rev.Store(max(s.rev.Load(), rev))
	default:
		return fmt.Errorf("unknown record type %q", tag)
	}
	return nil
}

// apply commits a recorded event to the store as the write did, at the
// time it did, unless the state holds it already (a snapshot taken while
// the segment was written). The store is not shared yet.
func (s *Store) apply(ev eventRecord) error {
	r := s.resource(ev.res)
	o := ev.obj
	if o.ResourceVersion <= r.last {
		if o.ResourceVersion <= r.snapshotLast {
			return nil // in the snapshot already
		}
		return fmt.Errorf("revision %d of %s is not after the resource's last, %d", o.ResourceVersion, ev.res, r.last)
	}
	key := o.Key()
	cur := r.objects[key]
	switch {
	case ev.typ == Added && cur != nil:
		return fmt.Errorf("%s %q created at revision %d exists already", ev.res, key, o.ResourceVersion)
	case ev.typ != Added && cur == nil:
		return fmt.Errorf("%s %q written at revision %d does not exist", ev.res, key, o.ResourceVersion)
	}
	if ev.typ == Deleted {
		delete(r.objects, key)
	} else {
		r.objects[key] = o
	}
	if ev.typ != Modified {
		r.keys.Store(nil)
	}
	e := &Event{Type: ev.typ, Revision: o.ResourceVersion, Object: o, Prev: cur, at: ev.at, store: s}
	r.push(s, e)
	r.last = o.ResourceVersion
	s.rev.Store(max(s.rev.Load(), o.ResourceVersion))
	return nil
}

// evictAll applies the history bounds after a replay: age and bytes.
func (s *Store) evictAll(cutoff time.Time) {
	for _, r := range s.resources {
		r.evictOlder(s, cutoff)
	}
	s.trim()
}

// logEvent appends the record of an event to the log; the resource's lock
// is held. It returns the record's position, for waitDurable.
func (d *disk) logEvent(typ EventType, res string, at time.Time, o *Object) (int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.buf.event(typ, res, at, o)
	return d.appendLocked(d.buf.seal())
}

// appendLocked writes a record; d.mu is held.
func (d *disk) appendLocked(rec []byte) (int64, error) {
	if d.err != nil {
		return 0, d.err
	}
	n, err := d.f.Write(rec)
	d.written += int64(n)
	d.since += int64(n)
	if d.since >= max(d.snapshotBytes, d.lastSnap) {
		d.due.Store(true)
	}
	if err != nil {
		d.err = fmt.Errorf("storage: writing the log (the store takes no more writes): %w", err)
		return 0, d.err
	}
	return d.written, nil
}

// waitDurable returns once the log is durable up to pos: the caller runs
// the fdatasync for everything written so far if no one is running one,
// else waits for that one and then, if it did not cover pos, tries again.
func (d *disk) waitDurable(pos int64) error {
	d.syncMu.Lock()
	for d.synced < pos {
		if d.syncErr != nil {
			err := d.syncErr
			d.syncMu.Unlock()
			return err
		}
		if d.syncing {
			done := d.syncDone
			d.syncMu.Unlock()
			<-done
			d.syncMu.Lock()
			continue
		}
		d.syncing = true
		d.syncMu.Unlock()
		d.mu.Lock()
		f, target := d.f, d.written
		d.mu.Unlock()
		err := d.datasync(f)
		if err != nil {
			d.mu.Lock()
			if d.f != f {
				err = nil // a snapshot left f, durably, and may have closed it
			}
			d.mu.Unlock()
		}
		d.syncMu.Lock()
		d.syncing = false
		if err == nil {
			d.synced = max(d.synced, target)
		} else if d.syncErr == nil {
			d.syncErr = fmt.Errorf("storage: fdatasync of the log (the store takes no more writes): %w", err)
		}
		close(d.syncDone)
		d.syncDone = make(chan struct{})
		if err != nil {
			err := d.syncErr
			d.syncMu.Unlock()
			d.fail(err)
			return err
		}
	}
	d.syncMu.Unlock()
	return nil
}

// durable marks the log durable up to pos.
func (d *disk) durable(pos int64) {
	d.syncMu.Lock()
	d.synced = max(d.synced, pos)
	d.syncMu.Unlock()
}

// fail makes every later write fail with err.
func (d *disk) fail(err error) {
	d.mu.Lock()
	if d.err == nil {
		d.err = err
	}
	d.mu.Unlock()
}

// reserve writes a reservation record so that revisions up to at least
// need may be handed out; the caller holds a resource's lock. A revision
// is handed out only once a reservation covers it, so after a crash the
// next process starts past every revision a client may have seen.
func (d *disk) reserve(need int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.reserved.Load() >= need {
		return nil
	}
	upTo := need + reserveBlock - 1
	d.buf.start(tagReserve)
	d.buf.uint(uint64(upTo))
	if _, err := d.appendLocked(d.buf.seal()); err != nil {
		return err
	}
	d.reserved.Store(upTo)
	return nil
}

// nextRev hands out the next revision, covered by a reservation.
func (s *Store) nextRev() (int64, error) {
	for {
		cur := s.rev.Load()
		if cur+1 > s.disk.reserved.Load() {
			if err := s.disk.reserve(cur + 1); err != nil {
				return 0, err
			}
		}
		if s.rev.CompareAndSwap(cur, cur+1) {
			return cur + 1, nil
		}
	}
}

// logCompact records a compaction; s.mu is held.
func (d *disk) logCompact(rev int64) (int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.buf.start(tagCompact)
	d.buf.uint(uint64(rev))
	return d.appendLocked(d.buf.seal())
}

// logCompactResource records a compaction of one resource; its lock is
// held.
func (d *disk) logCompactResource(res string, rev int64) (int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.buf.start(tagCompactR)
	d.buf.string(res)
	d.buf.uint(uint64(rev))
	return d.appendLocked(d.buf.seal())
}

// Close closes the store's data directory: it makes the log durable,
// waits for a snapshot in progress and releases the directory. Writes
// then fail with ErrClosed; reads go on. Without Options.Dir it does
// nothing. It is safe to call more than once.
func (s *Store) Close() error {
	d := s.disk
	if d == nil {
		return nil
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	failed := d.err
	if d.err == nil {
		d.err = fmt.Errorf("storage: %w", ErrClosed)
	}
	d.mu.Unlock()
	d.snapshots.Wait()
	d.mu.Lock()
	f, target := d.f, d.written
	d.mu.Unlock()
	err := failed
	if serr := d.datasync(f); serr != nil && err == nil {
		err = fmt.Errorf("storage: fdatasync of the log: %w", serr)
	}
	if err == nil {
		d.durable(target)
	}
	if cerr := f.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("storage: %w", cerr)
	}
	if cerr := d.lock.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("storage: %w", cerr)
	}
	return err
}

// maybeSnapshot starts a snapshot in the background if one is due and none
// runs. Close waits for it.
func (s *Store) maybeSnapshot() {
	d := s.disk
	if !d.due.Load() || !d.snapshotting.CompareAndSwap(false, true) {
		return
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		d.snapshotting.Store(false)
		return
	}
	d.snapshots.Add(1)
	d.mu.Unlock()
	go func() {
		defer d.snapshots.Done()
		defer d.snapshotting.Store(false)
		if err := s.snapshot(); err != nil {
			d.logger.Error("storage: snapshot failed; the log keeps growing until one succeeds", "err", err)
		}
	}()
}

// snapshot starts a new segment, writes the state of every resource to a
// snapshot, then removes the segments and snapshot it replaces.
func (s *Store) snapshot() error {
	d := s.disk
	d.mu.Lock()
	if d.err != nil {
		d.mu.Unlock()
		if d.closed {
			return nil
		}
		return d.err
	}
	// The old segment's records all go in the snapshot or stay in it:
	// make them durable before anything follows them.
	if err := d.datasync(d.f); err != nil {
		d.err = fmt.Errorf("storage: fdatasync of the log (the store takes no more writes): %w", err)
		d.mu.Unlock()
		return d.err
	}
	old, next := d.f, d.seg+1
	d.since = 0 // if the snapshot fails, the next try is once as much is written again
	d.due.Store(false)
	if err := d.newSegment(next); err != nil {
		_ = os.Remove(filepath.Join(d.dir, segmentName(next)))
		d.mu.Unlock()
		return err // the old segment goes on
	}
	pos := d.written
	d.mu.Unlock()
	d.durable(pos)
	err := s.writeSnapshot(next)
	d.mu.Lock()
	d.snapshotErr = err
	if err == nil {
		d.snap = next
	}
	d.mu.Unlock()
	_ = old.Close()
	if err != nil {
		return err
	}
	entries, _ := os.ReadDir(d.dir)
	for _, e := range entries {
		if i, ok := parseIndex(e.Name(), "wal-", ".log"); ok && i < next {
			_ = os.Remove(filepath.Join(d.dir, e.Name()))
		} else if i, ok := parseIndex(e.Name(), "snap-", ".snap"); ok && i < next {
			_ = os.Remove(filepath.Join(d.dir, e.Name()))
		}
	}
	return nil
}

// writeSnapshot writes the snapshot of the state before segment next,
// resource by resource: each resource's state is taken under its lock, so
// it holds exactly the records of the old segments, and maybe some of the
// new one (its last revision says which).
func (s *Store) writeSnapshot(next uint64) error {
	d := s.disk
	path := filepath.Join(d.dir, snapshotName(next))
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("storage: snapshot: %w", err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	w := &countingWriter{w: bufio.NewWriterSize(f, 1<<20)}
	if _, err = w.Write(header(snapMagic)); err != nil {
		return fmt.Errorf("storage: snapshot: %w", err)
	}
	var e recordBuf
	count := uint64(0)
	put := func() error {
		count++
		_, err := w.Write(e.seal())
		return err
	}
	s.mu.RLock()
	compacted := s.compacted
	names := make([]string, 0, len(s.resources))
	for name := range s.resources {
		names = append(names, name)
	}
	s.mu.RUnlock()
	slices.Sort(names)
	e.start(tagSnapshot)
	e.uint(uint64(d.reserved.Load()))
	e.uint(uint64(compacted))
	if err = put(); err != nil {
		return fmt.Errorf("storage: snapshot: %w", err)
	}
	for _, name := range names {
		r := s.resource(name)
		r.mu.RLock()
		rc, last, events := r.history.compacted, r.last, make([]*Event, r.history.len())
		for i := range events {
			events[i] = r.history.at(i)
		}
		var base map[string]*Object
		if len(events) == 0 {
			base = r.objects
		} else {
			_, base, _ = r.stateAt(events[0].Revision - 1)
		}
		if len(events) == 0 {
			base = maps.Clone(base)
		}
		r.mu.RUnlock()
		e.start(tagResource)
		e.string(name)
		e.uint(uint64(rc))
		e.uint(uint64(last))
		e.uint(uint64(len(base)))
		e.uint(uint64(len(events)))
		if err = put(); err != nil {
			return fmt.Errorf("storage: snapshot: %w", err)
		}
		keys := make([]string, 0, len(base))
		for k := range base {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			e.start(tagObject)
			e.object(base[k])
			if err = put(); err != nil {
				return fmt.Errorf("storage: snapshot: %w", err)
			}
		}
		for _, ev := range events {
			e.event(ev.Type, name, ev.at, ev.Object)
			if err = put(); err != nil {
				return fmt.Errorf("storage: snapshot: %w", err)
			}
		}
	}
	e.start(tagEnd)
	e.uint(count)
	if err = put(); err != nil {
		return fmt.Errorf("storage: snapshot: %w", err)
	}
	if err = w.w.(*bufio.Writer).Flush(); err == nil {
		if err = d.datasync(f); err == nil {
			err = f.Close()
		}
	}
	if err == nil {
		if err = os.Rename(tmp, path); err == nil {
			err = d.syncDir(d.dir)
		}
	}
	if err != nil {
		return fmt.Errorf("storage: snapshot: %w", err)
	}
	d.mu.Lock()
	d.lastSnap = w.n
	d.mu.Unlock()
	return nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// loadSnapshot loads a snapshot into the empty store and returns its size.
func (s *Store) loadSnapshot(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("storage: %w", err)
	}
	if err := checkHeader(path, b, snapMagic); err != nil {
		return 0, err
	}
	l := snapshotLoader{s: s}
	_, err = records(b[fileHeader:], l.record)
	if err == nil && !l.ended {
		err = errors.New("the snapshot ends before its end record (truncated)")
	}
	if err != nil {
		return 0, corrupt(path, "%v", err)
	}
	s.evictAll(s.opts.Now().Add(-s.opts.HistoryAge))
	return int64(len(b)), nil
}

// snapshotLoader applies a snapshot's records in order.
type snapshotLoader struct {
	s              *Store
	count          uint64 // records read
	started, ended bool
	// The resource being read, the objects and events of it still to
	// come, and its last revision.
	r               *resource
	res             string
	objects, events uint64
	last            int64
}

func (l *snapshotLoader) record(p []byte, _ int) error {
	s := l.s
	d := recordReader{b: p[1:]}
	tag := p[0]
	l.count++
	switch {
	case l.ended:
		return errors.New("records after the end record")
	case !l.started:
		if tag != tagSnapshot {
			return errors.New("the first record is not the snapshot's")
		}
		l.started = true
		rev, compacted := d.uint(), d.uint()
		if err := d.end(); err != nil {
			return err
		}
		if rev > 1<<62 || compacted > rev {
			return fmt.Errorf("bad revisions %d, %d", rev, compacted)
		}
		s.rev.Store(int64(rev))
		s.compacted = int64(compacted)
	case tag == tagResource && l.objects == 0 && l.events == 0:
		l.res = d.string()
		compacted, last := d.uint(), d.uint()
		l.objects, l.events = d.uint(), d.uint()
		if err := d.end(); err != nil {
			return err
		}
		if _, dup := s.resources[l.res]; dup {
			return fmt.Errorf("resource %s twice", l.res)
		}
		if last > uint64(s.rev.Load()) || compacted > uint64(s.rev.Load()) {
			return fmt.Errorf("resource %s: revisions %d, %d beyond the snapshot's %d", l.res, compacted, last, s.rev.Load())
		}
		l.r, l.last = s.resource(l.res), int64(last)
		l.r.history.compacted = int64(compacted)
		// apply checks that each event follows the previous one.
		l.r.last = l.r.history.compacted
		l.endResource()
	case tag == tagObject && l.objects > 0:
		l.objects--
		o := d.object()
		if err := d.end(); err != nil {
			return err
		}
		if _, dup := l.r.objects[o.Key()]; dup || o.ResourceVersion > l.r.history.compacted {
			return fmt.Errorf("object %s %q twice, or newer than the resource's compaction", l.res, o.Key())
		}
		l.r.objects[o.Key()] = o
		l.r.keys.Store(nil)
	case (tag == tagAdded || tag == tagModified || tag == tagDeleted) && l.objects == 0 && l.events > 0:
		l.events--
		ev := d.event(tag)
		if err := d.end(); err != nil {
			return err
		}
		if ev.res != l.res {
			return fmt.Errorf("an event of %s among those of %s", ev.res, l.res)
		}
		if err := s.apply(ev); err != nil {
			return err
		}
		if l.r.last > l.last {
			return fmt.Errorf("%s: an event at revision %d, after the resource's last revision %d", l.res, l.r.last, l.last)
		}
		l.endResource()
	case tag == tagEnd && l.objects == 0 && l.events == 0:
		n := d.uint()
		if err := d.end(); err != nil {
			return err
		}
		if n != l.count-1 {
			return fmt.Errorf("%d records, the end record says %d", l.count-1, n)
		}
		l.ended = true
	default:
		return fmt.Errorf("unexpected record %q", tag)
	}
	return nil
}

// endResource sets the resource's last revision once its events are read:
// the log's records of it up to that revision are in the snapshot.
func (l *snapshotLoader) endResource() {
	if l.events == 0 {
		l.r.last, l.r.snapshotLast = l.last, l.last
	}
}

// writeFileSync writes a file durably: a temporary file, fdatasync,
// rename, fsync of the directory.
func (d *disk) writeFileSync(path string, b []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = d.datasync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = d.syncDir(filepath.Dir(path))
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("storage: %w", err)
	}
	return nil
}

// truncateSync cuts a file at size, durably.
func (d *disk) truncateSync(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	err = f.Truncate(size)
	if err == nil {
		err = d.datasync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("storage: repairing the log: %w", err)
	}
	return nil
}

// datasync is the datasync of f, unless the store's tests turned syncs off.
func (d *disk) datasync(f *os.File) error {
	if d.noSync {
		return nil
	}
	return datasync(f)
}

// syncDir makes a directory's entries durable.
func (d *disk) syncDir(dir string) error {
	if d.noSync {
		return nil
	}
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// durable returns once the log is durable up to pos, then starts a
// snapshot if one is due.
func (s *Store) durable(pos int64) error {
	err := s.disk.waitDurable(pos)
	s.maybeSnapshot()
	return err
}
