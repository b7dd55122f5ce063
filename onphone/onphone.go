// Package onphone keeps the run droidgo does in the background on the
// phone it drives (run --detach): its files beside the deployed droidgo
// (the state, the log, the recording), whether its process still lives,
// and reading its recording while it is written.
package onphone

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// The files of the background run, in the directory of the droidgo that
// runs on the phone (deploy's directory).
const (
	StateFile     = "run.json"  // Run: which process, which recording
	LogFile       = "run.log"   // what it prints
	RecordingFile = "run.jsonl" // its recording, unless --record says
)

// Run is the state of a background run.
type Run struct {
	PID       int       `json:"pid"`
	Task      string    `json:"task"`
	Recording string    `json:"recording"`
	Log       string    `json:"log"`
	Started   time.Time `json:"started"`
}

// ErrNone says no background run was started in the directory.
var ErrNone = errors.New("no run was started with --detach on this phone")

// Write records r as the background run of dir (atomically: a reader
// never sees half of it).
func Write(dir string, r Run) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, StateFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, StateFile))
}

// Read returns the background run of dir (ErrNone when there is none).
func Read(dir string) (Run, error) {
	var r Run
	b, err := os.ReadFile(filepath.Join(dir, StateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return r, ErrNone
	}
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil || r.PID <= 0 {
		return r, fmt.Errorf("%s is not the state of a background run", filepath.Join(dir, StateFile))
	}
	return r, nil
}

// Clear removes the state of dir's background run, before another starts.
func Clear(dir string) error {
	err := os.Remove(filepath.Join(dir, StateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// Alive reports whether the process pid still runs: it exists, is no
// zombie, and is a droidgo (a pid can be reused).
func Alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // no /proc to ask
	}
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
		return false
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return bytes.Contains(cmdline, []byte("droidgo"))
}

// ErrEnded is a background run that ended before the line wanted was
// written (killed before its result).
var ErrEnded = errors.New("the background run ended without a result (it was killed); its recording stops there")

// Follower reads the lines of a file while the process pid writes it.
type Follower struct {
	r   *bufio.Reader
	pid int
	// Poll is the pause between looks at a file with nothing new.
	Poll time.Duration
}

// NewFollower follows r, written by the process pid.
func NewFollower(r io.Reader, pid int) *Follower {
	return &Follower{r: bufio.NewReaderSize(r, 64<<10), pid: pid, Poll: 200 * time.Millisecond}
}

// Next returns the next line that is not empty, waiting for it while the
// process runs; ErrEnded once it has ended and the file has no more.
func (f *Follower) Next(ctx context.Context) ([]byte, error) {
	var line []byte
	for {
		b, err := f.r.ReadBytes('\n')
		line = append(line, b...)
		if err == nil {
			if len(bytes.TrimSpace(line)) == 0 {
				line = line[:0]
				continue
			}
			return line, nil
		}
		if !errors.Is(err, io.EOF) {
			return nil, err
		}
		if !Alive(f.pid) {
			// What it wrote last may have come after the read.
			if b, err := f.r.ReadBytes('\n'); err == nil {
				return append(line, b...), nil
			}
			return nil, ErrEnded
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(f.Poll):
		}
	}
}

// Open opens the run's recording, waiting for it while the run starts.
func Open(ctx context.Context, r Run) (*os.File, error) {
	for {
		f, err := os.Open(r.Recording)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, fs.ErrNotExist) || !Alive(r.PID) {
			return nil, fmt.Errorf("the background run's recording: %w", err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
