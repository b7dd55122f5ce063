package macro

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Store is the directory macros are kept in, one NAME.toml file each.
type Store struct{ Dir string }

// DefaultDir is where macros are kept: $XDG_DATA_HOME/droidgo/macros, or
// ~/.local/share/droidgo/macros when XDG_DATA_HOME is not set.
func DefaultDir(getenv func(string) string) (string, error) {
	if d := getenv("XDG_DATA_HOME"); d != "" {
		if !filepath.IsAbs(d) {
			return "", fmt.Errorf("XDG_DATA_HOME is %q, not an absolute path", d)
		}
		return filepath.Join(d, "droidgo", "macros"), nil
	}
	home := getenv("HOME")
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return "", fmt.Errorf("where to keep macros: no XDG_DATA_HOME and %w", err)
		}
	}
	return filepath.Join(home, ".local", "share", "droidgo", "macros"), nil
}

// nameOK is what a macro may be called: a file name on every system.
var nameOK = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ErrBadName is wrapped by the error for a name a macro cannot have.
var ErrBadName = errors.New("not a macro name")

// ErrNotFound is wrapped by the error for a macro that does not exist.
var ErrNotFound = errors.New("no such macro")

// CheckName reports whether name can be a macro's name.
func CheckName(name string) error {
	if !nameOK.MatchString(name) || strings.HasSuffix(name, ".toml") {
		return fmt.Errorf("%w: %q (letters, digits, '.', '_' and '-', at most 64, not starting with '.' or '-')", ErrBadName, name)
	}
	return nil
}

// Path is the file of the macro called name.
func (s Store) Path(name string) string { return filepath.Join(s.Dir, name+".toml") }

// Info is a macro as Store.List lists it: the macro, or the error that
// keeps its file from being read.
type Info struct {
	Name  string
	File  string
	Macro *Macro
	Err   error
}

// List lists the macros in the store, by name; a file that cannot be
// read is listed with its error.
func (s Store) List() ([]Info, error) {
	ents, err := os.ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list macros: %w", err)
	}
	var out []Info
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".toml")
		if !ok || e.IsDir() || CheckName(name) != nil {
			continue
		}
		m, err := s.Load(name)
		out = append(out, Info{Name: name, File: s.Path(name), Macro: m, Err: err})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Load reads the macro called name.
func (s Store) Load(name string) (*Macro, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	path := s.Path(name)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w %q (in %s)", ErrNotFound, name, s.Dir)
	}
	if err != nil {
		return nil, fmt.Errorf("read macro: %w", err)
	}
	defer f.Close()
	// One byte past the limit is enough for Parse to say it is too large.
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read macro %s: %w", path, err)
	}
	return Parse(data, name, path)
}

// Save writes m to the store. An existing macro of the same name is
// replaced only with overwrite. The file is written whole or not at all.
func (s Store) Save(m *Macro, overwrite bool) (string, error) {
	if err := CheckName(m.Name); err != nil {
		return "", err
	}
	data, err := m.Encode()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return "", fmt.Errorf("save macro: %w", err)
	}
	path := s.Path(m.Name)
	if _, err := os.Stat(path); err == nil && !overwrite {
		return "", fmt.Errorf("a macro %s exists already (%s): remove it with 'droidgo macro rm %s' or save with --force", m.Name, path, m.Name)
	}
	tmp, err := os.CreateTemp(s.Dir, "."+m.Name+".*.tmp")
	if err != nil {
		return "", fmt.Errorf("save macro: %w", err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("save macro: %w", werr)
	}
	return path, nil
}

// Remove deletes the macro called name.
func (s Store) Remove(name string) (string, error) {
	if err := CheckName(name); err != nil {
		return "", err
	}
	path := s.Path(name)
	if err := os.Remove(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%w %q (in %s)", ErrNotFound, name, s.Dir)
		}
		return "", fmt.Errorf("remove macro: %w", err)
	}
	return path, nil
}
