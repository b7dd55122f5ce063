package adb

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"syscall"
	"time"
)

// maxSyncPath is the longest path the sync protocol accepts.
const maxSyncPath = 1024

// FileInfo is what a sync STAT/STA2 reports.
type FileInfo struct {
	Mode  uint32
	Size  uint64
	Mtime int64
}

// Pull reads a file from the device with the sync protocol: a stat (STA2 when
// statV2, else STAT) to report a missing file clearly, then RECV.
func (c *Client) Pull(ctx context.Context, serial, path string, statV2 bool) ([]byte, FileInfo, error) {
	if len(path) == 0 || len(path) > maxSyncPath {
		return nil, FileInfo{}, fmt.Errorf("pull %q: bad path length %d", short(path), len(path))
	}
	cc, err := c.open(ctx, serial, "sync:")
	if err != nil {
		return nil, FileInfo{}, fmt.Errorf("pull %s: %w", path, err)
	}
	defer cc.Close()
	fi, err := syncStat(cc, path, statV2)
	if err != nil {
		return nil, fi, fmt.Errorf("pull %s: %w", path, deviceLostUnlessFS(serial, cc.wrap(err)))
	}
	data, err := syncRecv(cc, path)
	if err != nil {
		return nil, fi, fmt.Errorf("pull %s: %w", path, deviceLostUnlessFS(serial, cc.wrap(err)))
	}
	_ = syncRequest(cc, "QUIT", "")
	return data, fi, nil
}

// deviceLostUnlessFS keeps file errors (missing file, FAIL replies) as they
// are and marks transport failures as a lost device.
func deviceLostUnlessFS(serial string, err error) error {
	var fe *SyncError
	var le *localError
	if errors.As(err, &fe) || errors.As(err, &le) || errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return deviceLost(serial, err)
}

// SyncError is a FAIL reply of the sync service.
type SyncError struct{ Msg string }

func (e *SyncError) Error() string { return "device: " + e.Msg }

func syncRequest(w io.Writer, id, path string) error {
	buf := make([]byte, 8+len(path))
	copy(buf, id)
	binary.LittleEndian.PutUint32(buf[4:], uint32(len(path)))
	copy(buf[8:], path)
	_, err := w.Write(buf)
	return err
}

func syncStat(rw io.ReadWriter, path string, v2 bool) (FileInfo, error) {
	if !v2 {
		if err := syncRequest(rw, "STAT", path); err != nil {
			return FileInfo{}, err
		}
		var b [16]byte
		if _, err := io.ReadFull(rw, b[:]); err != nil {
			return FileInfo{}, err
		}
		if string(b[:4]) != "STAT" {
			return FileInfo{}, fmt.Errorf("protocol error: got %q, want STAT", b[:4])
		}
		fi := FileInfo{
			Mode:  binary.LittleEndian.Uint32(b[4:]),
			Size:  uint64(binary.LittleEndian.Uint32(b[8:])),
			Mtime: int64(binary.LittleEndian.Uint32(b[12:])),
		}
		if fi.Mode == 0 {
			return fi, fmt.Errorf("remote file %s: %w", path, fs.ErrNotExist)
		}
		return fi, nil
	}
	if err := syncRequest(rw, "STA2", path); err != nil {
		return FileInfo{}, err
	}
	var b [72]byte
	if _, err := io.ReadFull(rw, b[:]); err != nil {
		return FileInfo{}, err
	}
	if string(b[:4]) != "STA2" {
		return FileInfo{}, fmt.Errorf("protocol error: got %q, want STA2", b[:4])
	}
	if e := binary.LittleEndian.Uint32(b[4:]); e != 0 {
		errno := syscall.Errno(e)
		if errno == syscall.ENOENT {
			return FileInfo{}, fmt.Errorf("remote file %s: %w", path, fs.ErrNotExist)
		}
		return FileInfo{}, &SyncError{Msg: fmt.Sprintf("stat %s: %v", path, errno)}
	}
	return FileInfo{
		Mode:  binary.LittleEndian.Uint32(b[24:]),
		Size:  binary.LittleEndian.Uint64(b[40:]),
		Mtime: int64(binary.LittleEndian.Uint64(b[56:])),
	}, nil
}

func syncRecv(rw io.ReadWriter, path string) ([]byte, error) {
	if err := syncRequest(rw, "RECV", path); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	var hdr [8]byte
	for {
		if _, err := io.ReadFull(rw, hdr[:]); err != nil {
			return nil, err
		}
		n := binary.LittleEndian.Uint32(hdr[4:])
		switch string(hdr[:4]) {
		case "DATA":
			if n > 64<<10 {
				return nil, fmt.Errorf("protocol error: DATA chunk of %d bytes", n)
			}
			if out.Len()+int(n) > maxOutput {
				return nil, fmt.Errorf("file larger than %d bytes", maxOutput)
			}
			if _, err := io.CopyN(&out, rw, int64(n)); err != nil {
				return nil, err
			}
		case "DONE":
			return out.Bytes(), nil
		case "FAIL":
			if n > 4096 {
				return nil, fmt.Errorf("protocol error: FAIL message of %d bytes", n)
			}
			msg := make([]byte, n)
			if _, err := io.ReadFull(rw, msg); err != nil {
				return nil, err
			}
			return nil, &SyncError{Msg: string(msg)}
		default:
			return nil, fmt.Errorf("protocol error: got %q in RECV reply", hdr[:4])
		}
	}
}

// Stat reports a file of the device (STA2 when statV2, else STAT); a
// missing file is an error wrapping fs.ErrNotExist.
func (c *Client) Stat(ctx context.Context, serial, path string, statV2 bool) (FileInfo, error) {
	if len(path) == 0 || len(path) > maxSyncPath {
		return FileInfo{}, fmt.Errorf("stat %q: bad path length %d", short(path), len(path))
	}
	cc, err := c.open(ctx, serial, "sync:")
	if err != nil {
		return FileInfo{}, fmt.Errorf("stat %s: %w", path, err)
	}
	defer cc.Close()
	fi, err := syncStat(cc, path, statV2)
	if err != nil {
		return fi, fmt.Errorf("stat %s: %w", path, deviceLostUnlessFS(serial, cc.wrap(err)))
	}
	_ = syncRequest(cc, "QUIT", "")
	return fi, nil
}

// maxSyncData is the most a sync DATA message may carry.
const maxSyncData = 64 << 10

// Push writes what r holds to path on the device with the sync protocol
// (SEND "path,mode", DATA chunks, DONE mtime) and waits for the device's
// OKAY. perm is the file's permission bits; adbd creates missing parent
// directories. A FAIL reply is a *SyncError.
func (c *Client) Push(ctx context.Context, serial, path string, perm fs.FileMode, mtime time.Time, r io.Reader) error {
	spec := fmt.Sprintf("%s,%d", path, 0o100000|uint32(perm.Perm()))
	if len(path) == 0 || len(spec) > maxSyncPath {
		return fmt.Errorf("push %q: bad path length %d", short(path), len(path))
	}
	cc, err := c.open(ctx, serial, "sync:")
	if err != nil {
		return fmt.Errorf("push %s: %w", path, err)
	}
	defer cc.Close()
	if err := syncSend(cc, spec, mtime, r); err != nil {
		return fmt.Errorf("push %s: %w", path, deviceLostUnlessFS(serial, cc.wrap(err)))
	}
	_ = syncRequest(cc, "QUIT", "")
	return nil
}

// localError marks a failure to read what is being pushed, which is no
// sign of a lost device.
type localError struct{ err error }

func (e *localError) Error() string { return "read the local file: " + e.err.Error() }
func (e *localError) Unwrap() error { return e.err }

func syncSend(rw io.ReadWriter, spec string, mtime time.Time, r io.Reader) error {
	if err := syncRequest(rw, "SEND", spec); err != nil {
		return err
	}
	buf := make([]byte, 8+maxSyncData)
	copy(buf, "DATA")
	for {
		n, rerr := io.ReadFull(r, buf[8:])
		if n > 0 {
			binary.LittleEndian.PutUint32(buf[4:], uint32(n))
			if _, err := rw.Write(buf[:8+n]); err != nil {
				return err
			}
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return &localError{rerr}
		}
	}
	done := []byte{'D', 'O', 'N', 'E', 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(done[4:], uint32(mtime.Unix()))
	if _, err := rw.Write(done); err != nil {
		return err
	}
	var hdr [8]byte
	if _, err := io.ReadFull(rw, hdr[:]); err != nil {
		return err
	}
	n := binary.LittleEndian.Uint32(hdr[4:])
	switch string(hdr[:4]) {
	case "OKAY":
		return nil
	case "FAIL":
		if n > 4096 {
			return fmt.Errorf("protocol error: FAIL message of %d bytes", n)
		}
		msg := make([]byte, n)
		if _, err := io.ReadFull(rw, msg); err != nil {
			return err
		}
		return &SyncError{Msg: string(msg)}
	}
	return fmt.Errorf("protocol error: got %q in SEND reply", hdr[:4])
}
