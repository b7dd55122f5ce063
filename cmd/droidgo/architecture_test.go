package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestArchitectureDoc keeps docs/ARCHITECTURE.md true to the code: every
// package, type, function, method, field, constant, file, directory and
// environment variable it names in backquotes must exist, each qualified
// name in the package or type it names (resolved from the parsed Go
// source), each file at the path it gives.
func TestArchitectureDoc(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	code, err := loadCode(root)
	if err != nil {
		t.Fatal(err)
	}
	checked, problems := code.check(string(doc))
	for _, p := range problems {
		t.Errorf("docs/ARCHITECTURE.md: %s", p)
	}
	t.Logf("%d names checked", checked)
	if checked < 100 {
		t.Fatalf("only %d names checked: the page or this test lost its way", checked)
	}
}

// TestArchitectureDocCatchesWrongNames: the check fails on names that
// exist, but not where the page puts them, and on files named without
// their path.
func TestArchitectureDocCatchesWrongNames(t *testing.T) {
	t.Parallel()
	code, err := loadCode(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"uixml.Screen.TapPoint", true},
		{"tui.Screen.TapPoint", false}, // TapPoint is uixml's, tui has no Screen
		{"uixml.UI.Hold", false},       // Hold is tui.UI's
		{"tui.UI.Hold", true},
		{"loop.Config.Hold", true},     // a field
		{"loop.Config.Holds", false},   // no such field or method
		{"loop.Event.Outcome", true},   // a field
		{"loop.Outcome.Done", false},   // Outcome is a type without that member
		{"model.Backend.Chat", true},   // an interface's method
		{"recording.Config", false},    // the package has none
		{"config.Settings.Loop", true}, // a method
		{"deps.show", true},            // a type of package main, then its method
		{"Screen.TapPoint", true},      // a type, then its method
		{"Screen.Hold", false},
		{"loop.HoldTurn", true}, // a constant
		{"uixml/elements.go", true},
		{"uixml/nope.go", false},
		{"elements.go", false}, // a file is named by its path
		{"fixtures/", true},
		{"fixtures/nope/", false},
		{"record(stepOutcome)", true},
		{"nosuchfunc()", false},
		{"mulRows", true},
		{"noSuchName", false},
		{"DROIDGO_ISA", true},
		{"DROIDGO_NO_SUCH_VAR", false},
	} {
		n, problems := code.check("`" + c.name + "`")
		if n != 1 || (len(problems) == 0) != c.ok {
			t.Errorf("`%s`: %d checked, problems %q; want ok=%v", c.name, n, problems, c.ok)
		}
	}
}

// codeIndex is what the repository's Go source declares, by package.
type codeIndex struct {
	root string
	// pkgs maps a package name (its package clause, _test dropped) to
	// what it declares at top level.
	pkgs map[string]*pkgDecls
	// names are every declared name anywhere: top-level names, methods,
	// fields and interface methods.
	names map[string]bool
	// strings are the string literals of the program, tests left out
	// (environment variables are named in them).
	strings map[string]bool
}

type pkgDecls struct {
	top   map[string]bool            // funcs, types, vars, consts
	types map[string]map[string]bool // a type's fields and methods
}

// loadCode parses every Go file under root (not testdata, not hidden
// directories).
func loadCode(root string) (*codeIndex, error) {
	c := &codeIndex{root: root, pkgs: map[string]*pkgDecls{}, names: map[string]bool{}, strings: map[string]bool{}}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if p != root && (strings.HasPrefix(e.Name(), ".") || e.Name() == "testdata" || e.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		c.add(f, strings.HasSuffix(p, "_test.go"))
		return nil
	})
	return c, err
}

func (c *codeIndex) pkg(name string) *pkgDecls {
	name = strings.TrimSuffix(name, "_test")
	p := c.pkgs[name]
	if p == nil {
		p = &pkgDecls{top: map[string]bool{}, types: map[string]map[string]bool{}}
		c.pkgs[name] = p
	}
	return p
}

func (p *pkgDecls) members(typ string) map[string]bool {
	m := p.types[typ]
	if m == nil {
		m = map[string]bool{}
		p.types[typ] = m
	}
	return m
}

func (c *codeIndex) add(f *ast.File, test bool) {
	p := c.pkg(f.Name.Name)
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			c.names[d.Name.Name] = true
			if d.Recv == nil || len(d.Recv.List) == 0 {
				p.top[d.Name.Name] = true
				continue
			}
			if typ := recvType(d.Recv.List[0].Type); typ != "" {
				p.members(typ)[d.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					p.top[s.Name.Name] = true
					c.names[s.Name.Name] = true
					c.addMembers(p.members(s.Name.Name), s.Type)
				case *ast.ValueSpec:
					for _, n := range s.Names {
						p.top[n.Name] = true
						c.names[n.Name] = true
					}
				}
			}
		}
	}
	if test {
		return // environment variables count when the program reads them
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if l, ok := n.(*ast.BasicLit); ok && l.Kind == token.STRING {
			c.strings[strings.Trim(l.Value, "`\"")] = true
		}
		return true
	})
}

// addMembers records the fields of a struct type and the methods of an
// interface type.
func (c *codeIndex) addMembers(m map[string]bool, t ast.Expr) {
	var fields *ast.FieldList
	switch t := t.(type) {
	case *ast.StructType:
		fields = t.Fields
	case *ast.InterfaceType:
		fields = t.Methods
	default:
		return
	}
	for _, f := range fields.List {
		for _, n := range f.Names {
			m[n.Name] = true
			c.names[n.Name] = true
		}
		if len(f.Names) == 0 { // embedded: its name is a field too
			if typ := recvType(f.Type); typ != "" {
				m[typ] = true
			}
		}
	}
}

// recvType is the type name of a receiver or an embedded field: T, *T,
// T[P], pkg.T.
func recvType(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return recvType(e.X)
	case *ast.IndexExpr:
		return recvType(e.X)
	case *ast.IndexListExpr:
		return recvType(e.X)
	case *ast.SelectorExpr:
		return e.Sel.Name
	case *ast.Ident:
		return e.Name
	}
	return ""
}

var (
	identRE     = regexp.MustCompile(`^[A-Za-z_]\w*$`)
	qualifiedRE = regexp.MustCompile(`^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$`)
	callRE      = regexp.MustCompile(`^([A-Za-z_]\w*)\(\w*\)$`)
	fileRE      = regexp.MustCompile(`^[\w./-]+\.(go|md|sh|h|s|py)$`)
	dirRE       = regexp.MustCompile(`^[a-z][\w-]*(/[\w-]+)*/?$`)
	envRE       = regexp.MustCompile(`^[A-Z][A-Z0-9]*_[A-Z0-9_]+$`)
	quotedRE    = regexp.MustCompile("`([^`\n]+)`")
)

// check resolves every backquoted name of doc and says which do not
// exist where doc puts them.
func (c *codeIndex) check(doc string) (checked int, problems []string) {
	for _, m := range quotedRE.FindAllStringSubmatch(doc, -1) {
		s := m[1]
		var err error
		switch {
		case envRE.MatchString(s):
			if !c.strings[s] {
				err = fmt.Errorf("no code reads the environment variable %s", s)
			}
		case fileRE.MatchString(s):
			err = c.file(s)
		case strings.Contains(s, "/") && dirRE.MatchString(s):
			if fi, serr := os.Stat(filepath.Join(c.root, filepath.FromSlash(strings.TrimSuffix(s, "/")))); serr != nil || !fi.IsDir() {
				err = fmt.Errorf("no directory %s", s)
			}
		case qualifiedRE.MatchString(s):
			err = c.qualified(strings.Split(s, "."))
		case callRE.MatchString(s):
			if name := callRE.FindStringSubmatch(s)[1]; !c.names[name] {
				err = fmt.Errorf("nothing is named %s", name)
			}
		case identRE.MatchString(s):
			if !c.names[s] && c.pkgs[s] == nil {
				err = fmt.Errorf("nothing is named %s", s)
			}
		default:
			continue // markup and examples: <think>, NAME(k=v), droidgo run
		}
		checked++
		if err != nil {
			problems = append(problems, fmt.Sprintf("`%s`: %v", s, err))
		}
	}
	return checked, problems
}

// file checks a file named by its path from the repository's root.
func (c *codeIndex) file(p string) error {
	if !strings.Contains(p, "/") {
		return fmt.Errorf("name the file by its path from the repository's root")
	}
	if fi, err := os.Stat(filepath.Join(c.root, filepath.FromSlash(path.Clean(p)))); err != nil || fi.IsDir() {
		return fmt.Errorf("no file %s", p)
	}
	return nil
}

// qualified resolves pkg.Name[.Member] or Type.Member: the first part is a
// package (then the second is declared in it) or a type of some package;
// each later part is a field or method of the type before it.
func (c *codeIndex) qualified(parts []string) error {
	if p := c.pkgs[parts[0]]; p != nil {
		if !p.top[parts[1]] {
			return fmt.Errorf("package %s has no %s", parts[0], parts[1])
		}
		return c.member(p, parts[1], parts[2:])
	}
	var found []error
	for name, p := range c.pkgs {
		if !p.top[parts[0]] {
			continue
		}
		err := c.member(p, parts[0], parts[1:])
		if err == nil {
			return nil
		}
		found = append(found, fmt.Errorf("%s.%w", name, err))
	}
	if len(found) == 0 {
		return fmt.Errorf("no package or type %s", parts[0])
	}
	return found[0]
}

// member resolves the members parts of type typ of package p.
func (c *codeIndex) member(p *pkgDecls, typ string, parts []string) error {
	if len(parts) == 0 {
		return nil
	}
	m, ok := p.types[typ]
	if !ok || !m[parts[0]] {
		return fmt.Errorf("%s has no field or method %s", typ, parts[0])
	}
	if len(parts) == 1 {
		return nil
	}
	// Deeper: the member must be a type's name (an embedded field) to go on.
	if _, ok := p.types[parts[0]]; !ok {
		return fmt.Errorf("%s.%s is not a type with members", typ, parts[0])
	}
	return c.member(p, parts[0], parts[1:])
}

// TestJSONGoesThroughJSONOut: every JSON output of the commands is encoded
// onto deps.jsonOut (which escapes what a terminal would act on), with
// its write error returned: no command marshals JSON itself or encodes
// onto another writer.
func TestJSONGoesThroughJSONOut(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "json" {
				return true
			}
			switch sel.Sel.Name {
			case "Marshal", "MarshalIndent":
				t.Errorf("%s: json.%s: encode onto d.jsonOut() instead", fset.Position(call.Pos()), sel.Sel.Name)
			case "NewEncoder":
				checked++
				if !isJSONOut(call.Args[0]) {
					t.Errorf("%s: json.NewEncoder onto something other than d.jsonOut()", fset.Position(call.Pos()))
				}
			}
			return true
		})
	}
	if checked < 10 {
		t.Fatalf("only %d JSON encoders found: the test lost its way", checked)
	}
}

// isJSONOut reports a call of a jsonOut method: d.jsonOut(), o.d.jsonOut().
func isJSONOut(e ast.Expr) bool {
	c, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	s, ok := c.Fun.(*ast.SelectorExpr)
	return ok && s.Sel.Name == "jsonOut"
}
