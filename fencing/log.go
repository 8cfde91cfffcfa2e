package fencing

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
)

// The on-disk log shared by DurableGuard and Resource: an append-only file
// of framed records, replayed at open.
//
//	frame  = header payload
//	header = len uint32 | crc32c(payload) uint32 | crc32c(first 8 header bytes) uint32   (little endian)
//
// A crash in the middle of an append leaves a prefix of the last frame. Replay
// treats as torn — and truncates — only a final frame that is short: a partial
// header, or a valid header whose length runs past the end of the file. Those
// were never acknowledged: the fsync that acknowledges a record makes the
// file's length durable with it, so an acknowledged frame lies wholly inside
// the file. Anything else is corruption (*CorruptError), never cut off
// silently, so a floor cannot go down by accident: a frame that is there in
// full but fails its payload checksum, and a header that cannot be read —
// also when it and everything after it are zeros. A file system can leave
// zeros where a crash interrupted an append that was never fsynced (the
// length reached the disk, the data did not), but a disk that loses or
// zeroes blocks after an fsync leaves the same bytes in place of an
// acknowledged record, and nothing in the file tells the two apart; a floor
// that went down is worse than a resource that waits for a repair with a
// bound (Repair).

const (
	frameHeaderSize = 12
	maxRecordSize   = 64 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func appendFrame(dst, payload []byte) []byte {
	var h [frameHeaderSize]byte
	binary.LittleEndian.PutUint32(h[0:4], uint32(len(payload)))
	binary.LittleEndian.PutUint32(h[4:8], crc32.Checksum(payload, castagnoli))
	binary.LittleEndian.PutUint32(h[8:12], crc32.Checksum(h[0:8], castagnoli))
	dst = append(dst, h[:]...)
	return append(dst, payload...)
}

func allZero(b []byte) bool { return len(bytes.Trim(b, "\x00")) == 0 }

// replayFrames calls fn with each record's payload in order and returns the
// length of the valid prefix. good < len(data) means a torn tail follows. A
// damaged record is returned as a *CorruptError with Offset set.
func replayFrames(data []byte, fn func([]byte) error) (good int64, err error) {
	off := 0
	for off < len(data) {
		rest := data[off:]
		if len(rest) < frameHeaderSize {
			return int64(off), nil // a partial header: torn
		}
		n := binary.LittleEndian.Uint32(rest[0:4])
		if crc32.Checksum(rest[0:8], castagnoli) != binary.LittleEndian.Uint32(rest[8:12]) {
			// Not torn, also when only zeros follow: the file's length
			// covers a whole header, and an fsync that acknowledged a record
			// made that length durable with it, so these bytes may be an
			// acknowledged record the disk lost (see the comment above).
			reason := "bad record header (length unreadable)"
			if allZero(rest) {
				reason = fmt.Sprintf("zero-filled tail of %d bytes where a record header should be", len(rest))
			}
			return int64(off), &CorruptError{Offset: int64(off), Reason: reason}
		}
		if n > maxRecordSize {
			return int64(off), &CorruptError{Offset: int64(off), Reason: fmt.Sprintf("record length %d exceeds %d", n, maxRecordSize)}
		}
		end := frameHeaderSize + int(n)
		if end > len(rest) {
			return int64(off), nil // the length runs past the end of the file: torn
		}
		payload := rest[frameHeaderSize:end]
		if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(rest[4:8]) {
			e := &CorruptError{Offset: int64(off), Reason: "checksum mismatch in a full-length record"}
			e.describe(payload)
			return int64(off), e
		}
		if err := fn(payload); err != nil {
			e := &CorruptError{Offset: int64(off), Reason: err.Error()}
			e.describe(payload)
			return int64(off), e
		}
		off += end
	}
	return int64(off), nil
}

// logFile is an open log positioned at its end. Not safe for concurrent
// use: its owner serializes appends.
type logFile struct {
	path string
	f    *os.File
	size int64
	// err is sticky: after a failed write or fsync the file's state on disk
	// is unknown (a failed fsync may have dropped dirty pages), so the log
	// refuses further appends until it is reopened and replayed.
	err error
}

// replayInfo says what openLog found.
type replayInfo struct {
	Records   int
	Truncated int64 // bytes of a torn tail that were cut off
}

// openLog opens (or creates) the log at path, replays it through fn and cuts
// off a torn tail, durably, before returning.
func openLog(path string, fn func([]byte) error) (*logFile, replayInfo, error) {
	var info replayInfo
	if _, err := createIfMissing(path); err != nil {
		return nil, info, err
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, info, err
	}
	data, err := readAll(f)
	if err != nil {
		f.Close()
		return nil, info, err
	}
	good, err := replayFrames(data, func(p []byte) error {
		info.Records++
		return fn(p)
	})
	if err != nil {
		f.Close()
		var ce *CorruptError
		if errors.As(err, &ce) {
			ce.Path = path
			return nil, info, ce
		}
		return nil, info, fmt.Errorf("%s: %w", path, err)
	}
	if good < int64(len(data)) {
		info.Truncated = int64(len(data)) - good
		if err := f.Truncate(good); err != nil {
			f.Close()
			return nil, info, fmt.Errorf("truncate torn tail of %s: %w", path, err)
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, info, fmt.Errorf("fsync %s: %w", path, err)
		}
	}
	if _, err := f.Seek(good, 0); err != nil {
		f.Close()
		return nil, info, err
	}
	return &logFile{path: path, f: f, size: good}, info, nil
}

func readAll(f *os.File) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, st.Size())
	n, err := f.ReadAt(buf, 0)
	if err != nil && n != len(buf) {
		return nil, err
	}
	return buf[:n], nil
}

// createIfMissing creates an empty file at path if there is none and makes
// its directory entry durable (fsync of the directory).
func createIfMissing(path string) (bool, error) {
	if _, err := os.Stat(path); err == nil {
		return false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return false, err
	}
	if err := f.Close(); err != nil {
		return false, err
	}
	return true, syncDir(filepath.Dir(path))
}

// syncDir fsyncs a directory so that entries created or renamed in it survive a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

// append writes the payloads as frames in one write and, if sync, fsyncs
// the file before returning.
func (l *logFile) append(sync bool, payloads ...[]byte) error {
	if l.err != nil {
		return l.err
	}
	var buf []byte
	for _, p := range payloads {
		if len(p) > maxRecordSize {
			return fmt.Errorf("fencing: record of %d bytes exceeds %d", len(p), maxRecordSize)
		}
		buf = appendFrame(buf, p)
	}
	if _, err := l.f.Write(buf); err != nil {
		l.err = fmt.Errorf("%w: write %s: %v", ErrClosed, l.path, err)
		return l.err
	}
	l.size += int64(len(buf))
	if sync {
		if err := l.f.Sync(); err != nil {
			l.err = fmt.Errorf("%w: fsync %s: %v", ErrClosed, l.path, err)
			return l.err
		}
	}
	return nil
}

// sync fsyncs records appended without sync.
func (l *logFile) sync() error {
	if l.err != nil {
		return l.err
	}
	if err := l.f.Sync(); err != nil {
		l.err = fmt.Errorf("%w: fsync %s: %v", ErrClosed, l.path, err)
		return l.err
	}
	return nil
}

func (l *logFile) close() error {
	if l.err == nil {
		l.err = ErrClosed
	}
	return l.f.Close()
}

// rewriteLog atomically replaces the log at path with one holding payloads:
// write a temporary file, fsync it, rename it over path, fsync the directory.
// The caller must hold the log's lock and reopen the log afterwards.
func rewriteLog(path string, payloads [][]byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	var buf []byte
	for _, p := range payloads {
		buf = appendFrame(buf, p)
	}
	_, err = f.Write(buf)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("rewrite %s: %w", path, err)
	}
	return syncDir(filepath.Dir(path))
}
