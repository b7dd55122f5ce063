package adbd

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"
)

// toybox runs the file tools of Android's toybox that droidgo uses (cat,
// rm, ls, sha256sum, df, mkdir, chmod, mv, dd) on the fake's files, with
// the options, output and exit statuses of Android 10+'s toybox.
func (s *Server) toybox(argv []string, o *output) int {
	errf := func(code int, format string, a ...any) int {
		fmt.Fprintf(&o.stderr, argv[0]+": "+format+"\n", a...)
		return code
	}
	flags, args := splitFlags(argv[1:])
	switch argv[0] {
	case "cat":
		code := 0
		for _, f := range args {
			data, err := s.fs.read(f)
			if err != nil {
				code = errf(1, "%s: %s", f, errText(err))
				continue
			}
			o.stdout.Write(data)
		}
		return code
	case "rm":
		code := 0
		for _, f := range args {
			if !s.fs.remove(f) && !strings.Contains(flags, "f") {
				code = errf(1, "%s: No such file or directory", f)
			}
		}
		return code
	case "ls":
		dir := "/"
		if len(args) > 0 {
			dir = args[len(args)-1]
		}
		names, ok := s.fs.list(dir)
		if !ok {
			if _, ok := s.fs.get(dir); ok {
				fmt.Fprintln(&o.stdout, dir)
				return 0
			}
			return errf(1, "%s: No such file or directory", dir)
		}
		for _, n := range names {
			if strings.HasPrefix(n, ".") && !strings.Contains(flags, "a") {
				continue
			}
			fmt.Fprintln(&o.stdout, n)
		}
		return 0
	case "sha256sum":
		code := 0
		for _, f := range args {
			sum, err := s.fs.sha256(f)
			if err != nil {
				code = errf(1, "%s: %s", f, errText(err))
				continue
			}
			fmt.Fprintf(&o.stdout, "%x  %s\n", sum, f)
		}
		return code
	case "df":
		free := s.opts.FreeBytes
		if free == 0 {
			free = 64 << 30
		}
		if len(args) == 0 {
			args = []string{"/data"}
		}
		fmt.Fprintln(&o.stdout, "Filesystem      1K-blocks     Used Available Use% Mounted on")
		code := 0
		for _, p := range args {
			if _, ok := s.fs.get(p); !ok {
				code = errf(1, "%s: No such file or directory", p)
				continue
			}
			dev, mnt := "/dev/block/dm-5", "/"
			switch c := clean(p); {
			case c == "/data" || strings.HasPrefix(c, "/data/"):
				dev, mnt = "/dev/block/dm-46", "/data"
			case c == "/sdcard" || strings.HasPrefix(c, "/sdcard/"):
				dev, mnt = "/dev/fuse", "/storage/emulated"
			}
			total := max(free/1024*2, 1)
			used := total - free/1024
			fmt.Fprintf(&o.stdout, "%-15s %9d %8d %9d %3d%% %s\n", dev, total, used, free/1024, used*100/total, mnt)
		}
		return code
	case "mkdir":
		code := 0
		for _, d := range args {
			if f, ok := s.fs.get(d); ok {
				if !f.dir || !strings.Contains(flags, "p") {
					code = errf(1, "'%s': File exists", d)
				}
				continue
			}
			if pf, ok := s.fs.get(path.Dir(clean(d))); !strings.Contains(flags, "p") && (!ok || !pf.dir) {
				code = errf(1, "'%s': No such file or directory", d)
				continue
			}
			if err := s.fs.mkdirAll(d); err != nil {
				code = errf(1, "'%s': %s", d, errText(err))
			}
		}
		return code
	case "chmod":
		if len(args) < 2 {
			return errf(1, "Needs 2 arguments")
		}
		mode, err := strconv.ParseUint(args[0], 8, 32)
		if err != nil || mode > 0o7777 {
			return errf(1, "bad mode '%s' (the fake phone's chmod takes octal modes)", args[0])
		}
		code := 0
		for _, f := range args[1:] {
			if err := os.Chmod(s.fs.host(f), s.fs.perm(uint32(mode))); err != nil {
				code = errf(1, "%s: %s", f, errText(err))
			}
		}
		return code
	case "mv":
		if len(args) != 2 {
			return errf(1, "the fake phone's mv moves one file: mv [-f] SRC DST")
		}
		src, dst := args[0], args[1]
		if f, ok := s.fs.get(dst); ok && f.dir {
			dst = path.Join(clean(dst), path.Base(clean(src)))
		}
		if err := os.Rename(s.fs.host(src), s.fs.host(dst)); err != nil {
			return errf(1, "%s: %s", src, errText(err))
		}
		return 0
	case "dd":
		return s.dd(argv[1:], o)
	}
	return errf(127, "inaccessible or not found")
}

// splitFlags separates single-letter options (-p, -rf) from operands.
func splitFlags(args []string) (flags string, rest []string) {
	for _, a := range args {
		if len(a) > 1 && a[0] == '-' {
			flags += a[1:]
			continue
		}
		rest = append(rest, a)
	}
	return flags, rest
}

// errText is the strerror text of a file error, as toybox prints it.
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		err = le.Err
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "No such file or directory"
	case errors.Is(err, fs.ErrPermission):
		return "Permission denied"
	}
	msg := err.Error()
	if msg != "" {
		msg = strings.ToUpper(msg[:1]) + msg[1:]
	}
	return msg
}

// sha256 hashes a regular file of the phone.
func (d *diskFS) sha256(p string) ([]byte, error) {
	if f, ok := d.get(p); ok && f.dir {
		return nil, syscall.EISDIR
	}
	f, err := os.Open(d.host(p))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}

// dd copies if= to of= in blocks of bs= bytes, skipping skip= input
// blocks and seeking seek= output blocks, count= blocks at most; the
// output is cut at the seek offset unless conv=notrunc, as POSIX dd does.
// It reports the records on stderr as toybox does.
func (s *Server) dd(args []string, o *output) int {
	errf := func(format string, a ...any) int {
		fmt.Fprintf(&o.stderr, "dd: "+format+"\n", a...)
		return 1
	}
	var in, out string
	bs, seek, skip, count := int64(512), int64(0), int64(0), int64(-1)
	notrunc := false
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			return errf("unknown argument '%s'", a)
		}
		num := func(dst *int64) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 || (k == "bs" && (n == 0 || n > 64<<20)) {
				return fmt.Errorf("invalid number '%s'", v)
			}
			*dst = n
			return nil
		}
		var err error
		switch k {
		case "if":
			in = v
		case "of":
			out = v
		case "bs":
			err = num(&bs)
		case "seek":
			err = num(&seek)
		case "skip":
			err = num(&skip)
		case "count":
			err = num(&count)
		case "conv":
			for _, c := range strings.Split(v, ",") {
				if c != "notrunc" {
					return errf("unknown conv '%s' in the fake phone's dd", c)
				}
				notrunc = true
			}
		case "status":
		default:
			return errf("unknown argument '%s'", a)
		}
		if err != nil {
			return errf("%v", err)
		}
	}
	if in == "" || out == "" {
		return errf("the fake phone's dd needs if= and of=")
	}
	src, err := os.Open(s.fs.host(in))
	if err != nil {
		return errf("%s: %s", in, errText(err))
	}
	defer src.Close()
	if _, err := src.Seek(skip*bs, io.SeekStart); err != nil {
		return errf("%s: %s", in, errText(err))
	}
	dst, err := os.OpenFile(s.fs.host(out), os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return errf("%s: %s", out, errText(err))
	}
	defer dst.Close()
	if !notrunc {
		if err := dst.Truncate(seek * bs); err != nil {
			return errf("%s: %s", out, errText(err))
		}
	}
	if _, err := dst.Seek(seek*bs, io.SeekStart); err != nil {
		return errf("%s: %s", out, errText(err))
	}
	buf := make([]byte, bs)
	var full, partial, total int64
	for count < 0 || full+partial < count {
		n, err := io.ReadFull(src, buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return errf("%s: %s", out, errText(werr))
			}
			total += int64(n)
			if int64(n) == bs {
				full++
			} else {
				partial++
			}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return errf("%s: %s", in, errText(err))
		}
	}
	if err := dst.Close(); err != nil {
		return errf("%s: %s", out, errText(err))
	}
	fmt.Fprintf(&o.stderr, "%d+%d records in\n%d+%d records out\n%d bytes copied\n", full, partial, full, partial, total)
	return 0
}
