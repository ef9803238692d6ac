package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"
)

// The records of the log and of snapshots (persist.go). A record is framed
// as its payload's length (4 bytes, little endian), the CRC-32C of the
// payload (4 bytes) and the payload; the payload is a tag byte and fields:
// unsigned varints for numbers, a varint length and the bytes for strings.
//
//	'A', 'M', 'D' (log, snapshot)  an event: resource, time, object
//	'C' (log)                      a compaction: revision
//	'K' (log)                      a compaction of one resource: resource, revision
//	'V' (log)                      a reservation: revisions up to this one may be handed out
//	'S' (snapshot, first)          the snapshot: revision, compaction, first log segment after it
//	'R' (snapshot)                 a resource: name, compaction, last revision, counts of what follows
//	'O' (snapshot)                 an object of a resource's state before its first event
//	'Z' (snapshot, last)           the end: the number of records before it

// Record tags.
const (
	tagAdded    = 'A'
	tagModified = 'M'
	tagDeleted  = 'D'
	tagCompact  = 'C'
	tagCompactR = 'K'
	tagReserve  = 'V'
	tagSnapshot = 'S'
	tagResource = 'R'
	tagObject   = 'O'
	tagEnd      = 'Z'
)

// frameHeader is the size of a record's frame before its payload.
const frameHeader = 8

// maxRecord bounds a record's payload: a length beyond it is damage, not
// an object (the API server bounds objects to a few MiB).
const maxRecord = 1 << 30

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// errTorn marks a record cut short by the end of its file.
var errTorn = errors.New("record cut short by the end of the file")

// recordBuf builds a record in a buffer: reserve the frame, append fields, then
// seal.
type recordBuf struct{ b []byte }

func (e *recordBuf) start(tag byte) {
	e.b = append(e.b[:0], make([]byte, frameHeader)...)
	e.b = append(e.b, tag)
}

func (e *recordBuf) uint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *recordBuf) int(v int64)   { e.b = binary.AppendVarint(e.b, v) }

func (e *recordBuf) bytes(p []byte) {
	e.uint(uint64(len(p)))
	e.b = append(e.b, p...)
}

func (e *recordBuf) string(s string) {
	e.uint(uint64(len(s)))
	e.b = append(e.b, s...)
}

func (e *recordBuf) strMap(m map[string]string) {
	e.uint(uint64(len(m)))
	for k, v := range m {
		e.string(k)
		e.string(v)
	}
}

func (e *recordBuf) object(o *Object) {
	e.uint(uint64(o.ResourceVersion))
	e.string(o.Namespace)
	e.string(o.Name)
	e.string(o.UID)
	e.string(o.APIVersion)
	e.strMap(o.Labels)
	e.strMap(o.Fields)
	e.bytes(o.Data)
}

// event encodes an event of resource res committed at at.
func (e *recordBuf) event(typ EventType, res string, at time.Time, o *Object) {
	e.start(eventTag(typ))
	e.string(res)
	e.int(at.UnixNano())
	e.object(o)
}

// seal writes the frame and returns the record.
func (e *recordBuf) seal() []byte {
	payload := e.b[frameHeader:]
	binary.LittleEndian.PutUint32(e.b[0:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(e.b[4:], crc32.Checksum(payload, crcTable))
	return e.b
}

func eventTag(t EventType) byte {
	switch t {
	case Added:
		return tagAdded
	case Modified:
		return tagModified
	}
	return tagDeleted
}

// readRecord reads the record at the start of b and returns its payload and
// its size with the frame. A frame whose payload runs past the end of b is
// errTorn; a bad length or checksum is an error.
func readRecord(b []byte) (payload []byte, size int, err error) {
	if len(b) < frameHeader {
		return nil, 0, errTorn
	}
	n := binary.LittleEndian.Uint32(b)
	if n == 0 || n > maxRecord {
		return nil, 0, fmt.Errorf("record length %d", n)
	}
	if int64(n) > int64(len(b)-frameHeader) {
		return nil, 0, errTorn
	}
	payload = b[frameHeader : frameHeader+int(n)]
	if crc32.Checksum(payload, crcTable) != binary.LittleEndian.Uint32(b[4:]) {
		return nil, 0, errors.New("record checksum mismatch")
	}
	return payload, frameHeader + int(n), nil
}

// recordReader decodes the fields of a payload; the first error sticks.
type recordReader struct {
	b   []byte
	err error
}

func (d *recordReader) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("bad %s", what)
	}
}

func (d *recordReader) uint() uint64 { return readVarint(d, binary.Uvarint) }

func (d *recordReader) int() int64 { return readVarint(d, binary.Varint) }

// readVarint reads one number with read (binary.Uvarint or Varint).
func readVarint[T uint64 | int64](d *recordReader, read func([]byte) (T, int)) T {
	if d.err != nil {
		return 0
	}
	v, n := read(d.b)
	if n <= 0 {
		d.fail("number")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// rev reads a revision: positive, and small enough for an int64.
func (d *recordReader) rev() int64 {
	v := d.uint()
	if v == 0 || v > 1<<62 {
		d.fail("revision")
		return 0
	}
	return int64(v)
}

func (d *recordReader) bytes() []byte {
	n := d.uint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail("length")
		return nil
	}
	p := d.b[:n:n]
	d.b = d.b[n:]
	return p
}

func (d *recordReader) string() string { return string(d.bytes()) }

func (d *recordReader) strMap() map[string]string {
	n := d.uint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b))/2 { // each entry takes two bytes at least
		d.fail("map size")
		return nil
	}
	if n == 0 {
		return nil
	}
	m := make(map[string]string, n)
	for range n {
		k := d.string()
		m[k] = d.string()
	}
	return m
}

func (d *recordReader) object() *Object {
	o := &Object{ResourceVersion: d.rev()}
	o.Namespace, o.Name, o.UID, o.APIVersion = d.string(), d.string(), d.string(), d.string()
	o.Labels, o.Fields = d.strMap(), d.strMap()
	o.Data = bytes.Clone(d.bytes()) // not the file's buffer, which it would keep alive
	if d.err != nil {
		return nil
	}
	o.cost = objectCost(o)
	return o
}

// end checks that the payload was read entirely.
func (d *recordReader) end() error {
	if d.err == nil && len(d.b) > 0 {
		d.err = errors.New("trailing bytes")
	}
	return d.err
}

// eventRecord is a decoded event record.
type eventRecord struct {
	typ EventType
	res string
	at  time.Time
	obj *Object
}

func (d *recordReader) event(tag byte) eventRecord {
	ev := eventRecord{res: d.string(), at: time.Unix(0, d.int()), obj: d.object()}
	switch tag {
	case tagAdded:
		ev.typ = Added
	case tagModified:
		ev.typ = Modified
	default:
		ev.typ = Deleted
	}
	return ev
}

// records iterates over the framed records of b, calling fn with each
// payload and its offset in b. It stops at the first error of fn, or at a
// damaged record, which it returns with its offset (errTorn when the
// record runs past the end of b).
func records(b []byte, fn func(payload []byte, off int) error) (int, error) {
	off := 0
	for off < len(b) {
		p, n, err := readRecord(b[off:])
		if err != nil {
			return off, err
		}
		if err := fn(p, off); err != nil {
			return off, err
		}
		off += n
	}
	return off, nil
}

// zeros reports whether b holds only zero bytes: space a crash left
// allocated but never written.
func zeros(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
