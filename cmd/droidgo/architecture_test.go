package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestArchitectureDoc keeps docs/ARCHITECTURE.md true to the code: every
// package, type, function, field, file, directory and environment variable
// it names in backquotes must still exist under that name.
func TestArchitectureDoc(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	var src strings.Builder
	files := map[string]bool{}
	pkgs := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if e.IsDir() {
			if strings.HasPrefix(e.Name(), ".") && rel != "." || e.Name() == "testdata" && strings.HasPrefix(rel, "fixtures") {
				return filepath.SkipDir
			}
			files[filepath.ToSlash(rel)] = true
			return nil
		}
		files[e.Name()] = true
		if strings.HasSuffix(path, ".go") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			src.Write(b)
			src.WriteByte('\n')
			pkgs[filepath.Base(filepath.Dir(path))] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	code := src.String()
	names := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^(?:func (?:\([^)]*\) )?|type |var |const |\t)([A-Za-z_]\w*)`).FindAllStringSubmatch(code, -1) {
		names[m[1]] = true
	}
	declared := func(name string) bool { return names[name] }
	var (
		ident     = regexp.MustCompile(`^[A-Za-z_]\w*$`)
		qualified = regexp.MustCompile(`^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$`)
		call      = regexp.MustCompile(`^([A-Za-z_]\w*)\(\w*\)$`)
		file      = regexp.MustCompile(`^[\w./-]+\.(go|md|sh|h|s)$`)
		dir       = regexp.MustCompile(`^[a-z][\w-]*(/[\w-]+)*/?$`)
		env       = regexp.MustCompile(`^[A-Z][A-Z0-9]*_[A-Z0-9_]+$`)
	)
	checked := 0
	for _, m := range regexp.MustCompile("`([^`\n]+)`").FindAllStringSubmatch(string(doc), -1) {
		s := m[1]
		var ok bool
		switch {
		case env.MatchString(s):
			ok = strings.Contains(code, `"`+s+`"`)
		case file.MatchString(s):
			ok = files[filepath.Base(s)]
		case strings.Contains(s, "/") && dir.MatchString(s):
			ok = files[strings.TrimSuffix(s, "/")]
		case qualified.MatchString(s):
			parts := strings.Split(s, ".")
			// The first part is a package or a type; each other part is
			// declared somewhere as a name.
			ok = pkgs[parts[0]] || declared(parts[0])
			for _, p := range parts[1:] {
				ok = ok && declared(p)
			}
		case call.MatchString(s):
			ok = declared(call.FindStringSubmatch(s)[1])
		case ident.MatchString(s):
			ok = declared(s) || pkgs[s]
		default:
			continue // markup and examples: <think>, NAME(k=v)
		}
		checked++
		if !ok {
			t.Errorf("docs/ARCHITECTURE.md names `%s`, which the code no longer has", s)
		}
	}
	t.Logf("%d names checked", checked)
	if checked < 50 {
		t.Fatalf("only %d names checked: the page or this test lost its way", checked)
	}
}
