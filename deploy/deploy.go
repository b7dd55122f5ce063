// Package deploy puts files on a phone from the computer it is plugged
// into (droidgo's android/arm64 binary and its model, for droidgo to run on
// the phone): pushed with adb's sync protocol in parts whose sha256 the
// phone checks, so that a transfer cut short resumes where it stopped,
// verified whole with the phone's own sha256sum, and skipped when the file
// is there already and equal. The space it needs is checked with df before
// anything is sent. Every command line goes through device/shell's
// quoting.
package deploy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/droidgo/droidgo/device/adb"
	"github.com/droidgo/droidgo/device/shell"
)

// DefaultDir is where droidgo and its model go on the phone: the shell
// user's own directory, writable and executable from adb.
const DefaultDir = "/data/local/tmp/droidgo"

// BinaryName is the name of droidgo on the phone.
const BinaryName = "droidgo"

// DefaultPartSize is the size of the parts a file is sent in: the most a
// cut transfer sends again.
const DefaultPartSize = 8 << 20

// Phone is the phone files go to: its shell (each argv is quoted into
// one command line) and its files through sync. *adb.Device is one.
type Phone interface {
	Run(ctx context.Context, argv ...string) (shell.Result, error)
	Push(ctx context.Context, path string, perm fs.FileMode, r io.Reader) error
	Stat(ctx context.Context, path string) (adb.FileInfo, error)
}

var _ Phone = (*adb.Device)(nil)

// File is one file to put on the phone.
type File struct {
	// Name is its name in the directory on the phone.
	Name string
	// Path is the file of this computer.
	Path string
	// Perm is its permission bits on the phone (0755 for a program).
	Perm fs.FileMode
}

// Options say where files go and how they are sent.
type Options struct {
	// Dir is the directory on the phone; "" is DefaultDir.
	Dir string
	// PartSize is the size of the parts; 0 is DefaultPartSize.
	PartSize int64
	// Progress, when set, is told of each file's start and of each part
	// that arrived.
	Progress func(Progress)
}

// Progress is where the copy of one file stands.
type Progress struct {
	Name string
	// Done bytes of Total are on the phone; Resumed of them were there
	// from a transfer cut short before this one.
	Done, Total, Resumed int64
}

// Result is what became of one file. Its JSON is droidgo deploy --json's.
type Result struct {
	Name   string `json:"name"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
	// Copied is false when the file was on the phone already, equal.
	Copied bool `json:"copied"`
}

// SpaceError refuses a deploy the phone has no room for.
type SpaceError struct {
	Dir string
	// Need bytes are needed; Avail are free on the file system of Dir.
	Need, Avail int64
	// Files are the names of the files that need the room.
	Files []string
}

func (e *SpaceError) Error() string {
	return fmt.Sprintf("not enough space on the phone: copying %s to %s needs %s (%d bytes), and df says %s (%d bytes) are available there; free some space on the phone or deploy to another --dir",
		strings.Join(e.Files, " and "), e.Dir, Size(e.Need), e.Need, Size(e.Avail), e.Avail)
}

// VerifyError is a file whose copy on the phone does not have the sha256 of
// the file sent, twice.
type VerifyError struct {
	Name      string
	Want, Got string
}

func (e *VerifyError) Error() string {
	return fmt.Sprintf("%s: the copy on the phone has sha256 %s, not the %s of the file sent, after sending it again", e.Name, e.Got, e.Want)
}

// nameRE is what a file's name on the phone may be: one plain word that
// cannot be taken for an option or for the parts of a transfer.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9_+@%,=-][A-Za-z0-9_.+@%,=-]*$`)

// local is a file to send, with what was learnt of it.
type local struct {
	File
	size int64
	sum  string
}

// Run puts files into the directory on the phone and returns what became
// of each, in order.
func Run(ctx context.Context, p Phone, files []File, opts Options) ([]Result, error) {
	dir := opts.Dir
	if dir == "" {
		dir = DefaultDir
	}
	if err := CheckDir(dir); err != nil {
		return nil, err
	}
	part := opts.PartSize
	if part <= 0 {
		part = DefaultPartSize
	}
	if part > 64<<20 {
		return nil, fmt.Errorf("part size %d is over 64 MiB", part)
	}
	progress := opts.Progress
	if progress == nil {
		progress = func(Progress) {}
	}
	seen := map[string]bool{}
	ls := make([]local, len(files))
	for i, f := range files {
		if !nameRE.MatchString(f.Name) {
			return nil, fmt.Errorf("%q cannot be a file's name on the phone (one word of letters, digits and _.+@%%,=- not starting with a dot)", f.Name)
		}
		if seen[f.Name] {
			return nil, fmt.Errorf("two files are named %s on the phone", f.Name)
		}
		seen[f.Name] = true
		size, sum, err := hashFile(f.Path)
		if err != nil {
			return nil, err
		}
		ls[i] = local{File: f, size: size, sum: sum}
	}
	if _, err := check(ctx, p, "create "+dir, "mkdir", "-p", dir); err != nil {
		return nil, err
	}
	there, err := sums(ctx, p, dir, ls)
	if err != nil {
		return nil, err
	}
	// What each file to copy still needs: the parts a cut transfer left
	// joined stay.
	results := make([]Result, len(ls))
	var todo []int
	done := make([]int64, len(ls))
	for i, f := range ls {
		results[i] = Result{Name: f.Name, Bytes: f.size, SHA256: f.sum, Copied: there[f.Name] != f.sum}
		if !results[i].Copied {
			continue
		}
		todo = append(todo, i)
	}
	if len(todo) == 0 {
		return results, nil
	}
	if err := removeStale(ctx, p, dir, ls, todo); err != nil {
		return nil, err
	}
	var need, biggestPart int64
	var names []string
	for _, i := range todo {
		f := ls[i]
		joined, err := resumable(ctx, p, partialPath(dir, f), f.size, part)
		if err != nil {
			return nil, err
		}
		done[i] = joined
		need += f.size - joined
		biggestPart = max(biggestPart, min(part, f.size-joined))
		names = append(names, f.Name)
	}
	need += biggestPart // the part being joined sits beside the partial file
	avail, err := free(ctx, p, dir)
	if err != nil {
		return nil, err
	}
	if need > avail {
		return nil, &SpaceError{Dir: dir, Need: need, Avail: avail, Files: names}
	}
	for _, i := range todo {
		if err := copyFile(ctx, p, dir, ls[i], done[i], part, progress); err != nil {
			return nil, err
		}
	}
	return results, nil
}

// CheckDir refuses a directory on the phone that is not an absolute, clean
// path below the root.
func CheckDir(dir string) error {
	if !path.IsAbs(dir) || path.Clean(dir) != dir || dir == "/" || strings.IndexByte(dir, 0) >= 0 {
		return fmt.Errorf("the directory on the phone must be an absolute, clean path such as %s, not %q", DefaultDir, dir)
	}
	return nil
}

// hashFile returns a file's size and sha256.
func hashFile(name string) (int64, string, error) {
	f, err := os.Open(name)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, "", err
	}
	if !st.Mode().IsRegular() {
		return 0, "", fmt.Errorf("%s is not a regular file", name)
	}
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return 0, "", fmt.Errorf("read %s: %w", name, err)
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// partialPath is where the parts of f are joined on the phone, named for
// its content so that a different file of the same name never resumes
// from it. partPath is where one part arrives.
func partialPath(dir string, f local) string {
	return dir + "/." + f.Name + "." + f.sum[:16] + ".partial"
}

func partPath(dir string, f local) string {
	return dir + "/." + f.Name + "." + f.sum[:16] + ".part"
}

// check runs argv on the phone and fails, naming what was being done,
// unless it exited 0.
func check(ctx context.Context, p Phone, what string, argv ...string) (shell.Result, error) {
	res, err := p.Run(ctx, argv...)
	if err != nil {
		return res, fmt.Errorf("%s on the phone: %w", what, err)
	}
	if res.ExitKnown && res.Exit != 0 {
		return res, fmt.Errorf("%s on the phone: %s exited with status %d: %s", what, argv[0], res.Exit, firstLine(res.Output()))
	}
	return res, nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// sumLine is one line of sha256sum's output.
var sumLine = regexp.MustCompile(`^([0-9a-f]{64}) [ *](.+)$`)

// sums returns the sha256 of those of files that are in dir on the phone,
// by name, from one run of the phone's sha256sum (which names the missing
// ones on stderr and exits 1).
func sums(ctx context.Context, p Phone, dir string, files []local) (map[string]string, error) {
	argv := []string{"sha256sum"}
	byPath := map[string]string{}
	for _, f := range files {
		argv = append(argv, dir+"/"+f.Name)
		byPath[dir+"/"+f.Name] = f.Name
	}
	res, err := p.Run(ctx, argv...)
	if err != nil {
		return nil, fmt.Errorf("hash the files on the phone: %w", err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(res.Stdout), "\n") {
		m := sumLine.FindStringSubmatch(strings.TrimRight(line, "\r"))
		if m == nil {
			continue
		}
		if name, ok := byPath[m[2]]; ok {
			out[name] = m[1]
		}
	}
	return out, nil
}

// removeStale removes the parts of earlier transfers of the files to copy
// whose content was different: they can never be resumed.
func removeStale(ctx context.Context, p Phone, dir string, files []local, todo []int) error {
	res, err := check(ctx, p, "list "+dir, "ls", "-a", dir)
	if err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, i := range todo {
		keep[path.Base(partialPath(dir, files[i]))] = true
		keep[path.Base(partPath(dir, files[i]))] = true
	}
	argv := []string{"rm", "-f"}
	for _, name := range strings.Fields(string(res.Stdout)) {
		if keep[name] || !(strings.HasSuffix(name, ".partial") || strings.HasSuffix(name, ".part")) {
			continue
		}
		for _, i := range todo {
			if strings.HasPrefix(name, "."+files[i].Name+".") {
				argv = append(argv, dir+"/"+name)
				break
			}
		}
	}
	if len(argv) == 2 {
		return nil
	}
	_, err = check(ctx, p, "remove the parts of an earlier, different file", argv...)
	return err
}

// resumable returns how many bytes of a file of size the partial file on
// the phone holds in whole parts: a transfer cut short joined them, each
// checked before it was joined. A partial file longer than the file is
// removed.
func resumable(ctx context.Context, p Phone, partial string, size, part int64) (int64, error) {
	fi, err := p.Stat(ctx, partial)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("look for an earlier transfer: %w", err)
	}
	n := int64(fi.Size)
	if n > size || fi.Mode&0o170000 != 0o100000 {
		_, err := check(ctx, p, "remove "+partial, "rm", "-f", partial)
		return 0, err
	}
	if n == size {
		return n, nil
	}
	return n / part * part, nil
}

// free returns the bytes df reports available on the file system of dir.
func free(ctx context.Context, p Phone, dir string) (int64, error) {
	res, err := check(ctx, p, "check the free space", "df", "-k", dir)
	if err != nil {
		return 0, err
	}
	avail, err := ParseDF(string(res.Stdout))
	if err != nil {
		return 0, fmt.Errorf("check the free space on the phone: %w", err)
	}
	return avail, nil
}

// ParseDF returns the available bytes of the last file system listed by
// `df -k` (toybox's and coreutils' columns: Filesystem, 1K-blocks, Used,
// Available, Use%, Mounted on).
func ParseDF(out string) (int64, error) {
	lines := strings.Split(strings.TrimSpace(strings.ReplaceAll(out, "\r", "")), "\n")
	if len(lines) < 2 {
		return 0, fmt.Errorf("df printed no file system: %q", firstLine(out))
	}
	header := strings.Fields(lines[0])
	col := -1
	for i, h := range header {
		if h == "Available" || h == "Avail" {
			col = i
		}
	}
	f := strings.Fields(lines[len(lines)-1])
	if col < 0 || col >= len(f) {
		return 0, fmt.Errorf("df's output has no Available column: %q", firstLine(out))
	}
	kb, err := strconv.ParseInt(f[col], 10, 64)
	if err != nil || kb < 0 || kb > 1<<50 {
		return 0, fmt.Errorf("df's Available column is %q, not a number of KiB", f[col])
	}
	return kb * 1024, nil
}

// copyFile sends f from byte done on (a multiple of part): each part to
// the part file, checked with the phone's sha256sum, joined into the
// partial file at its place with dd, removed; then the partial file is
// checked whole and takes the file's name. A file that arrives corrupted
// is sent again from the start, once.
func copyFile(ctx context.Context, p Phone, dir string, f local, done, part int64, progress func(Progress)) error {
	src, err := os.Open(f.Path)
	if err != nil {
		return err
	}
	defer src.Close()
	partial, partFile := partialPath(dir, f), partPath(dir, f)
	for attempt := 0; ; attempt++ {
		resumed := done
		progress(Progress{Name: f.Name, Done: done, Total: f.size, Resumed: resumed})
		if f.size == 0 {
			if err := p.Push(ctx, partial, 0o600, strings.NewReader("")); err != nil {
				return fmt.Errorf("send %s: %w", f.Name, err)
			}
		}
		for off := done; off < f.size; off += part {
			if err := sendPart(ctx, p, f, src, off, min(part, f.size-off), part, partFile, partial); err != nil {
				return err
			}
			progress(Progress{Name: f.Name, Done: min(off+part, f.size), Total: f.size, Resumed: resumed})
		}
		got, err := sums(ctx, p, dir, []local{{File: File{Name: path.Base(partial)}}})
		if err != nil {
			return err
		}
		if sum := got[path.Base(partial)]; sum != f.sum {
			if _, err := check(ctx, p, "remove "+partial, "rm", "-f", partial); err != nil {
				return err
			}
			if attempt == 1 {
				return &VerifyError{Name: f.Name, Want: f.sum, Got: sum}
			}
			done = 0
			continue
		}
		break
	}
	if _, err := check(ctx, p, "set the permissions of "+f.Name, "chmod", strconv.FormatUint(uint64(f.Perm.Perm()), 8), partial); err != nil {
		return err
	}
	_, err = check(ctx, p, "put "+f.Name+" in place", "mv", "-f", partial, dir+"/"+f.Name)
	return err
}

// sendPart sends the n bytes of src at off as the part file, checks it
// (sending it again once when it arrived corrupted), joins it into the
// partial file at off and removes it.
func sendPart(ctx context.Context, p Phone, f local, src io.ReaderAt, off, n, part int64, partFile, partial string) error {
	for attempt := 0; ; attempt++ {
		h := sha256.New()
		r := io.TeeReader(io.NewSectionReader(src, off, n), h)
		if err := p.Push(ctx, partFile, 0o600, r); err != nil {
			return fmt.Errorf("send %s (bytes %d-%d): %w", f.Name, off, off+n, err)
		}
		want := hex.EncodeToString(h.Sum(nil))
		got, err := sums(ctx, p, path.Dir(partFile), []local{{File: File{Name: path.Base(partFile)}}})
		if err != nil {
			return err
		}
		if got[path.Base(partFile)] == want {
			break
		}
		if attempt == 1 {
			return &VerifyError{Name: fmt.Sprintf("%s (bytes %d-%d)", f.Name, off, off+n), Want: want, Got: got[path.Base(partFile)]}
		}
	}
	if _, err := check(ctx, p, "join the parts of "+f.Name, "dd", "if="+partFile, "of="+partial,
		"bs="+strconv.FormatInt(part, 10), "seek="+strconv.FormatInt(off/part, 10)); err != nil {
		return err
	}
	_, err := check(ctx, p, "remove "+partFile, "rm", "-f", partFile)
	return err
}

// Size formats a number of bytes for people (binary units).
func Size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
