// Package check holds the tests that the repository's Markdown files refer
// to things that exist (this file) and that every command the README shows
// runs from a fresh clone (readme_test.go). It has no code of its own:
// `go test ./docs/check` (and
// so `go test ./...` and `make test`) reads every *.md file of the
// repository (README.md, docs/**, e2e/README.md, wasmclient/README.md, ...;
// not what .gitignore leaves out, nor node_modules or testdata) and fails
// when
//
//	(a) a relative link, a backticked repository path (`docs/own-data.md`,
//	    `shared/protocol/rule.go`, `web/static/*.html`) or a path written in
//	    plain text from a top-level directory (docs/design.md section 2)
//	    names a file or folder that does not exist;
//	(b) a backticked Go identifier of one of the repository's own packages,
//	    `pkg.Name` or `pkg.Type.Member` (`protocol.Defaults`, `seal.MaxAbs`,
//	    `session.Result.KeyState`), or `dir/pkg.Name`
//	    (`cmd/hyfed.TestCreateThreshold`), names nothing that package
//	    declares (top-level declarations, methods, struct fields and
//	    interface methods, test files included);
//	(c) `hyfed <command>` in a backticked span or a code block names a
//	    command cmd/hyfed does not have, or a flag given in it (or in a
//	    backticked `--flag` later on the same line) is not one of that
//	    command's flags;
//	(d) text matching (?i)issue [0-9]+ appears outside docs/results/: a
//	    reader cannot resolve a work item's number, so the docs say what was
//	    done and why (the dated records in docs/results/ may keep them);
//	(e) a section named in quotes after a Markdown path (docs/encryption.md,
//	    "Threshold keys in the protocol") does not appear in that file.
//
// Limits, all on the side of missing a stale reference rather than raising
// a false alarm:
//
//   - Paths in plain text are checked only when they start with a top-level
//     directory of the repository; a path relative to something else
//     (`firefox/driver.js` in e2e/README.md) is not checked, nor are spans
//     with placeholders (`<engine>`, `{a,b}`, `...`, `$VAR`). What
//     .gitignore leaves out (bin/, .cache/, web/static/wasm/, ...) counts
//     as existing: a build makes it; so does a Markdown file the Makefile
//     writes (after `>` or `--out`: docs/results.md, docs/realdata.md).
//   - Link anchors (#section) are not checked; (e) checks quoted section
//     names only as text the target file contains (a heading or a bold
//     lead-in), case-insensitively.
//   - Identifiers are checked only in the `pkg.Name` form with pkg one of
//     the repository's package names (not "main"); other packages' names
//     (`mat.Dense`, `ring.NewPoly`) and bare `Type.Method` are not checked.
//     Members reached through an embedded field count only one level deep.
//   - The flags of a command are found by reading cmd/hyfed's source: the
//     function that calls newFlags("NAME", ...) and the functions and
//     methods it passes its *flag.FlagSet to (configFlags, the commands'
//     register methods), following calls; every fs.String/StringVar/Bool/
//     Int/Float64/Duration/Func/Var... call there with a literal name is a
//     flag. A method whose receiver's type cannot be read from the code is
//     taken as every method of that name, so a flag another command
//     registers the same way may pass. `hyfed data fetch`'s names and
//     `hyfed data export`'s flags are checked as one command, data.
//     A flag's value is not checked (`--step hyfed` passes). hyfed is
//     recognised as `hyfed`, `./hyfed` or `.../bin/hyfed` at the start of
//     a command (after environment assignments, nice or a prompt). A
//     backticked `--flag` of another command later on a line that named
//     `hyfed <command>` must name its own command (`hyfed serve
//     --insecure-demo`); a single-dash span (`-B`, LIBLINEAR's) is not
//     taken as hyfed's.
package check

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
	"sort"
	"strconv"
	"strings"
	"testing"
)

// repo is what the checks know about the repository.
type repo struct {
	root     string
	ignored  []string                       // anchored .gitignore paths, slash-separated, no trailing slash
	made     map[string]bool                // files the Makefile writes (after > or --out)
	topLevel map[string]bool                // top-level directories (not hidden)
	pkgDirs  map[string][]string            // package name -> directories (slash-separated, relative)
	decls    map[string]map[string]bool     // directory -> declared names ("Name", "Type.Member")
	embeds   map[string]map[string][]string // directory -> type -> embedded type names
	commands map[string]bool                // hyfed's commands
	flags    map[string]map[string]bool     // hyfed command -> its flags (without dashes)
	texts    map[string]string              // Markdown file -> its text, normalized for (e)
}

// finding is one reference that does not resolve.
type finding struct {
	file string
	line int
	msg  string
}

func TestReferences(t *testing.T) {
	r := loadRepo(t)
	files := r.markdownFiles(t)
	if len(files) < 5 {
		t.Fatalf("found only %d Markdown files under %s", len(files), r.root)
	}
	var all []finding
	for _, f := range files {
		all = append(all, r.checkFile(t, f)...)
	}
	for _, f := range all {
		t.Errorf("%s:%d: %s", f.file, f.line, f.msg)
	}
}

func loadRepo(t *testing.T) *repo {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
	r := &repo{root: dir, topLevel: map[string]bool{}, pkgDirs: map[string][]string{},
		decls: map[string]map[string]bool{}, embeds: map[string]map[string][]string{}, texts: map[string]string{}}
	if b, err := os.ReadFile(filepath.Join(dir, ".gitignore")); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			l = strings.TrimSpace(l)
			if strings.HasPrefix(l, "/") && !strings.ContainsAny(l, "*?[") {
				r.ignored = append(r.ignored, strings.Trim(l, "/"))
			}
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && !r.isIgnored(e.Name()) {
			r.topLevel[e.Name()] = true
		}
	}
	r.made = map[string]bool{}
	if b, err := os.ReadFile(filepath.Join(dir, "Makefile")); err == nil {
		for _, m := range madeRE.FindAllStringSubmatch(string(b), -1) {
			r.made[path.Clean(m[1])] = true
		}
	}
	r.loadPackages(t)
	r.loadCommands(t)
	return r
}

// isIgnored reports whether rel (slash-separated, relative to the root) is
// or lies under a path .gitignore leaves out, or under node_modules.
func (r *repo) isIgnored(rel string) bool {
	rel = strings.Trim(rel, "/")
	for _, ig := range r.ignored {
		if rel == ig || strings.HasPrefix(rel, ig+"/") {
			return true
		}
	}
	for _, part := range strings.Split(rel, "/") {
		if part == "node_modules" {
			return true
		}
	}
	return false
}

// walk visits the repository's files, skipping hidden and ignored folders.
func (r *repo) walk(fn func(rel string, d fs.DirEntry)) error {
	return filepath.WalkDir(r.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(r.root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() && rel != "." && (strings.HasPrefix(d.Name(), ".") || r.isIgnored(rel) || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		fn(rel, d)
		return nil
	})
}

func (r *repo) markdownFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := r.walk(func(rel string, d fs.DirEntry) {
		if !d.IsDir() && strings.HasSuffix(rel, ".md") {
			files = append(files, rel)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	return files
}

// loadPackages parses every Go file of the repository for the names each
// package declares.
func (r *repo) loadPackages(t *testing.T) {
	t.Helper()
	fset := token.NewFileSet()
	err := r.walk(func(rel string, d fs.DirEntry) {
		if d.IsDir() || !strings.HasSuffix(rel, ".go") {
			return
		}
		f, err := parser.ParseFile(fset, filepath.Join(r.root, rel), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			return
		}
		dir := path.Dir(rel)
		name := strings.TrimSuffix(f.Name.Name, "_test")
		if !contains(r.pkgDirs[name], dir) {
			r.pkgDirs[name] = append(r.pkgDirs[name], dir)
		}
		if r.decls[dir] == nil {
			r.decls[dir] = map[string]bool{}
			r.embeds[dir] = map[string][]string{}
		}
		names, embeds := r.decls[dir], r.embeds[dir]
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil || len(d.Recv.List) == 0 {
					names[d.Name.Name] = true
				} else if tn := typeName(d.Recv.List[0].Type); tn != "" {
					names[tn+"."+d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.ValueSpec:
						for _, n := range s.Names {
							names[n.Name] = true
						}
					case *ast.TypeSpec:
						names[s.Name.Name] = true
						var fields *ast.FieldList
						switch tt := s.Type.(type) {
						case *ast.StructType:
							fields = tt.Fields
						case *ast.InterfaceType:
							fields = tt.Methods
						}
						if fields == nil {
							continue
						}
						for _, fl := range fields.List {
							if len(fl.Names) == 0 {
								if en := typeName(fl.Type); en != "" {
									names[s.Name.Name+"."+en] = true
									embeds[s.Name.Name] = append(embeds[s.Name.Name], en)
								}
							}
							for _, n := range fl.Names {
								names[s.Name.Name+"."+n.Name] = true
							}
						}
					}
				}
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// typeName is the name of a (receiver, field or embedded) type expression:
// T, *T, T[P], pkg.T (as T).
func typeName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.StarExpr:
		return typeName(x.X)
	case *ast.IndexExpr:
		return typeName(x.X)
	case *ast.IndexListExpr:
		return typeName(x.X)
	case *ast.SelectorExpr:
		return x.Sel.Name
	}
	return ""
}

// hasMember reports whether dir's package declares typ.member, directly or
// through a field typ embeds (one level).
func (r *repo) hasMember(dir, typ, member string) bool {
	if r.decls[dir][typ+"."+member] {
		return true
	}
	for _, e := range r.embeds[dir][typ] {
		if r.decls[dir][e+"."+member] {
			return true
		}
	}
	return false
}

// flagMethods are the *flag.FlagSet methods that define a flag; the flag's
// name is the first string literal among their first two arguments.
var flagMethods = map[string]bool{
	"String": true, "StringVar": true, "Bool": true, "BoolVar": true, "BoolFunc": true,
	"Int": true, "IntVar": true, "Int64": true, "Int64Var": true, "Uint": true, "UintVar": true,
	"Uint64": true, "Uint64Var": true, "Float64": true, "Float64Var": true,
	"Duration": true, "DurationVar": true, "Func": true, "Var": true, "TextVar": true,
}

// loadCommands reads cmd/hyfed's command table and each command's flags.
func (r *repo) loadCommands(t *testing.T) {
	t.Helper()
	dir := filepath.Join(r.root, "cmd", "hyfed")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	funcs := map[string]*ast.FuncDecl{}     // "name" or "Type.method"
	methods := map[string][]*ast.FuncDecl{} // method name -> every method of that name
	structs := map[string]*ast.StructType{}
	var files []*ast.File
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					funcs[d.Name.Name] = d
				} else {
					funcs[typeName(d.Recv.List[0].Type)+"."+d.Name.Name] = d
					methods[d.Name.Name] = append(methods[d.Name.Name], d)
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					if s, ok := spec.(*ast.TypeSpec); ok {
						if st, ok := s.Type.(*ast.StructType); ok {
							structs[s.Name.Name] = st
						}
					}
				}
			}
		}
	}

	// The command table: var commands = []command{{"name", ...}, ...}.
	r.commands = map[string]bool{}
	for _, f := range files {
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if len(vs.Names) != 1 || vs.Names[0].Name != "commands" || len(vs.Values) != 1 {
					continue
				}
				if cl, ok := vs.Values[0].(*ast.CompositeLit); ok {
					for _, el := range cl.Elts {
						if c, ok := el.(*ast.CompositeLit); ok && len(c.Elts) > 0 {
							if name, ok := stringLit(c.Elts[0]); ok {
								r.commands[name] = true
							}
						}
					}
				}
			}
		}
	}
	if len(r.commands) < 5 {
		t.Fatalf("cmd/hyfed: found only %d commands in var commands", len(r.commands))
	}

	// fieldType is the type name of struct typ's field name.
	fieldType := func(typ, name string) string {
		st := structs[typ]
		if st == nil {
			return ""
		}
		for _, fl := range st.Fields.List {
			for _, n := range fl.Names {
				if n.Name == name {
					return typeName(fl.Type)
				}
			}
		}
		return ""
	}
	// localTypes maps a function's receiver, parameters and locals declared
	// with a visible type (var x T; x := T{}; x := &T{}) to their type names.
	localTypes := func(fd *ast.FuncDecl) map[string]string {
		m := map[string]string{}
		add := func(fl *ast.FieldList) {
			if fl == nil {
				return
			}
			for _, f := range fl.List {
				for _, n := range f.Names {
					m[n.Name] = typeName(f.Type)
				}
			}
		}
		add(fd.Recv)
		add(fd.Type.Params)
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.ValueSpec:
				if x.Type != nil {
					for _, id := range x.Names {
						m[id.Name] = typeName(x.Type)
					}
				}
			case *ast.AssignStmt:
				for i, lhs := range x.Lhs {
					id, ok := lhs.(*ast.Ident)
					if !ok || i >= len(x.Rhs) {
						continue
					}
					rhs := x.Rhs[i]
					if u, ok := rhs.(*ast.UnaryExpr); ok && u.Op == token.AND {
						rhs = u.X
					}
					if cl, ok := rhs.(*ast.CompositeLit); ok && cl.Type != nil {
						m[id.Name] = typeName(cl.Type)
					}
				}
			}
			return true
		})
		return m
	}
	// exprType is the type name of x (an identifier or a field selector
	// chain) in a function with the given locals, or "".
	var exprType func(x ast.Expr, locals map[string]string) string
	exprType = func(x ast.Expr, locals map[string]string) string {
		switch e := x.(type) {
		case *ast.Ident:
			return locals[e.Name]
		case *ast.SelectorExpr:
			if base := exprType(e.X, locals); base != "" {
				return fieldType(base, e.Sel.Name)
			}
		case *ast.ParenExpr:
			return exprType(e.X, locals)
		case *ast.StarExpr:
			return exprType(e.X, locals)
		}
		return ""
	}
	isFlagSetType := func(e ast.Expr) bool {
		if s, ok := e.(*ast.StarExpr); ok {
			if sel, ok := s.X.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "flag" && sel.Sel.Name == "FlagSet" {
					return true
				}
			}
		}
		return false
	}

	// flagsOf collects the flags fd registers on the flag sets named in
	// sets (and those its callees register on them).
	seen := map[*ast.FuncDecl]bool{}
	var flagsOf func(fd *ast.FuncDecl, sets map[string]bool, out map[string]bool)
	flagsOf = func(fd *ast.FuncDecl, sets map[string]bool, out map[string]bool) {
		if fd == nil || fd.Body == nil || seen[fd] {
			return
		}
		seen[fd] = true
		defer delete(seen, fd)
		locals := localTypes(fd)
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && sets[id.Name] && flagMethods[sel.Sel.Name] {
					for i := 0; i < len(call.Args) && i < 2; i++ {
						if name, ok := stringLit(call.Args[i]); ok {
							out[name] = true
							break
						}
					}
					return true
				}
			}
			// A call that passes one of the flag sets on.
			argAt := -1
			for i, a := range call.Args {
				if id, ok := a.(*ast.Ident); ok && sets[id.Name] {
					argAt = i
				}
			}
			if argAt < 0 {
				return true
			}
			var callees []*ast.FuncDecl
			switch fn := call.Fun.(type) {
			case *ast.Ident:
				if c := funcs[fn.Name]; c != nil {
					callees = append(callees, c)
				}
			case *ast.SelectorExpr:
				if typ := exprType(fn.X, locals); typ != "" && funcs[typ+"."+fn.Sel.Name] != nil {
					callees = append(callees, funcs[typ+"."+fn.Sel.Name])
				} else {
					callees = append(callees, methods[fn.Sel.Name]...)
				}
			}
			for _, c := range callees {
				params := c.Type.Params
				if params == nil {
					continue
				}
				i := 0
				for _, f := range params.List {
					names := f.Names
					if len(names) == 0 {
						i++
						continue
					}
					for _, pn := range names {
						if i == argAt && isFlagSetType(f.Type) {
							flagsOf(c, map[string]bool{pn.Name: true}, out)
						}
						i++
					}
				}
			}
			return true
		})
	}

	r.flags = map[string]map[string]bool{}
	for _, fd := range funcs {
		if fd.Body == nil {
			continue
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			as, ok := n.(*ast.AssignStmt)
			if !ok || len(as.Lhs) != 1 || len(as.Rhs) != 1 {
				return true
			}
			call, ok := as.Rhs[0].(*ast.CallExpr)
			if !ok {
				return true
			}
			if id, ok := call.Fun.(*ast.Ident); !ok || id.Name != "newFlags" || len(call.Args) == 0 {
				return true
			}
			name, ok := stringLit(call.Args[0])
			lhs, ok2 := as.Lhs[0].(*ast.Ident)
			if !ok || !ok2 {
				return true
			}
			cmd := strings.Fields(name)[0] // "data export" is checked as data
			if r.flags[cmd] == nil {
				r.flags[cmd] = map[string]bool{}
			}
			flagsOf(fd, map[string]bool{lhs.Name: true}, r.flags[cmd])
			return true
		})
	}
	for _, must := range []string{"experiment", "serve", "create"} {
		if len(r.flags[must]) < 5 {
			t.Fatalf("cmd/hyfed: found only %d flags of hyfed %s: the flag reader no longer fits the code", len(r.flags[must]), must)
		}
	}
}

func stringLit(e ast.Expr) (string, bool) {
	bl, ok := e.(*ast.BasicLit)
	if !ok || bl.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(bl.Value)
	return s, err == nil
}

var (
	issueRE    = regexp.MustCompile(`(?i)\bissue [0-9]+`)
	linkRE     = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	spanRE     = regexp.MustCompile("`([^`]+)`")
	identRE    = regexp.MustCompile(`^([a-z][a-z0-9_]*(?:/[a-z0-9_]+)*)\.([A-Z][A-Za-z0-9_]*)(?:\.([A-Z][A-Za-z0-9_]*))?(?:\(.*\))?$`)
	plainRE    = regexp.MustCompile(`(?:^|[\s(\["'=,])([A-Za-z0-9_-]+/[A-Za-z0-9_./*-]*[A-Za-z0-9_/*])`)
	sectionRE  = regexp.MustCompile(`([A-Za-z0-9_./-]+\.md)\)?,\s+"([^"]+)"`)
	flagTokRE  = regexp.MustCompile(`^--?([A-Za-z][A-Za-z0-9-]*)(?:=.*)?$`)
	lineNumRE  = regexp.MustCompile(`:\d+$`)
	hyfedCmdRE = regexp.MustCompile(`^(?:\./|(?:\S*/)?bin/)?hyfed$`)
	commandRE  = regexp.MustCompile(`^[a-z][a-z-]*$`)
	madeRE     = regexp.MustCompile(`(?:>\s*|--out\s+)([A-Za-z0-9_./-]+\.md)\b`)
	shellSepRE = regexp.MustCompile(`\|\||&&|[|;&]|\$\(|\)`)
)

// checkFile runs every check on one Markdown file.
func (r *repo) checkFile(t *testing.T, rel string) []finding {
	b, err := os.ReadFile(filepath.Join(r.root, rel))
	if err != nil {
		t.Fatal(err)
	}
	var out []finding
	add := func(line int, format string, args ...any) {
		out = append(out, finding{rel, line, fmt.Sprintf(format, args...)})
	}
	dir := path.Dir(rel)
	inResults := strings.HasPrefix(rel, "docs/results/")
	fenced := false
	for i, line := range strings.Split(string(b), "\n") {
		n := i + 1
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			fenced = !fenced
			continue
		}
		code := fenced || strings.HasPrefix(line, "    ") && !strings.HasPrefix(trimmed, "-") && !strings.HasPrefix(trimmed, "|")

		// (d) work-item numbers.
		if !inResults {
			if m := issueRE.FindString(line); m != "" {
				add(n, "%q: say what was done and why, not which work item it was (only docs/results/ may keep the numbers)", m)
			}
		}

		// (a) links.
		rest := line
		for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
			target := m[1]
			rest = strings.Replace(rest, m[0], "]()", 1)
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target = strings.SplitN(target, "#", 2)[0]
			if target == "" {
				continue
			}
			if !r.exists(path.Join(dir, target)) {
				add(n, "link to %s: no such file", target)
			}
		}

		// Backticked spans: paths, identifiers, commands.
		spans := spanRE.FindAllStringSubmatch(rest, -1)
		plain := spanRE.ReplaceAllString(rest, " ")
		var cmd string // the last hyfed command named on this line
		for _, m := range spans {
			span := strings.TrimSpace(m[1])
			if c, msgs := r.checkCommand(span); c != "" || len(msgs) > 0 {
				for _, msg := range msgs {
					add(n, "%s", msg)
				}
				if c != "" {
					cmd = c
				}
				continue
			}
			if strings.HasPrefix(span, "--") && cmd != "" {
				if fm := flagTokRE.FindStringSubmatch(strings.Fields(span)[0]); fm != nil && !r.knownFlag(cmd, fm[1]) {
					add(n, "`%s` after `hyfed %s`: hyfed %s has no flag --%s", span, cmd, cmd, fm[1])
				}
				continue
			}
			if strings.ContainsAny(span, " \t") {
				continue
			}
			if identRE.MatchString(span) {
				if msg := r.checkIdent(span); msg != "" {
					add(n, "%s", msg)
				}
				continue
			}
			if msg := r.checkPath(span); msg != "" {
				add(n, "%s", msg)
			}
		}

		// Commands in code blocks.
		if code {
			_, msgs := r.checkCommand(strings.TrimPrefix(trimmed, "$ "))
			for _, msg := range msgs {
				add(n, "%s", msg)
			}
		}

		// (a) paths in plain text.
		for _, m := range plainRE.FindAllStringSubmatch(plain, -1) {
			p := m[1]
			first := strings.SplitN(p, "/", 2)[0]
			if !r.topLevel[first] {
				continue
			}
			if identRE.MatchString(p) {
				if msg := r.checkIdent(p); msg != "" {
					add(n, "%s", msg)
				}
				continue
			}
			if msg := r.checkPath(p); msg != "" {
				add(n, "%s", msg)
			}
		}

		// (e) quoted sections.
		for _, m := range sectionRE.FindAllStringSubmatch(line, -1) {
			file, section := m[1], m[2]
			target := ""
			for _, cand := range []string{path.Join(dir, file), path.Clean(file)} {
				if st, err := os.Stat(filepath.Join(r.root, cand)); err == nil && !st.IsDir() {
					target = cand
					break
				}
			}
			if target == "" {
				continue // (a) reports a missing file
			}
			if !strings.Contains(r.text(t, target), normalize(section)) {
				add(n, "%s has no section %q", target, section)
			}
		}
	}
	return out
}

// text is a Markdown file's text as (e) compares it: lower case, emphasis
// and code marks removed, white space collapsed.
func (r *repo) text(t *testing.T, rel string) string {
	if s, ok := r.texts[rel]; ok {
		return s
	}
	b, err := os.ReadFile(filepath.Join(r.root, rel))
	if err != nil {
		t.Fatal(err)
	}
	s := normalize(string(b))
	r.texts[rel] = s
	return s
}

func normalize(s string) string {
	s = strings.ToLower(s)
	s = strings.NewReplacer("*", "", "`", "", "’", "'").Replace(s)
	return strings.Join(strings.Fields(s), " ")
}

// exists reports whether rel (slash-separated, relative to the root; it may
// hold a glob) names something in the repository, or under what .gitignore
// leaves out.
func (r *repo) exists(rel string) bool {
	rel = path.Clean(rel)
	if strings.HasPrefix(rel, "../") || rel == ".." {
		return false
	}
	if r.isIgnored(rel) || r.made[rel] {
		return true
	}
	if strings.ContainsAny(rel, "*?[") {
		m, _ := filepath.Glob(filepath.Join(r.root, filepath.FromSlash(rel)))
		return len(m) > 0
	}
	_, err := os.Stat(filepath.Join(r.root, filepath.FromSlash(rel)))
	return err == nil
}

// checkPath checks a single-token span or plain-text path that starts with
// a top-level directory of the repository; "" if it exists or is not such
// a path.
func (r *repo) checkPath(p string) string {
	if strings.ContainsAny(p, "<>{}$%") || strings.Contains(p, "...") || strings.Contains(p, "…") || !strings.Contains(p, "/") {
		return ""
	}
	p = lineNumRE.ReplaceAllString(p, "")
	p = strings.TrimPrefix(p, "./")
	if first := strings.SplitN(p, "/", 2)[0]; !r.topLevel[first] {
		return "" // relative to something else: not checked
	}
	if r.exists(p) {
		return ""
	}
	return p + ": no such file or folder in the repository"
}

// checkIdent checks a `pkg.Name`, `pkg.Type.Member` or `dir/pkg.Name` span
// of the repository's own packages; "" if it resolves or is no such form.
func (r *repo) checkIdent(span string) string {
	m := identRE.FindStringSubmatch(span)
	if m == nil {
		return ""
	}
	pkg, name, member := m[1], m[2], m[3]
	var dirs []string
	if strings.Contains(pkg, "/") {
		if r.decls[pkg] == nil {
			return "" // not a package path: checkPath judges it
		}
		dirs = []string{pkg}
	} else {
		if pkg == "main" {
			return ""
		}
		dirs = r.pkgDirs[pkg]
	}
	if len(dirs) == 0 {
		return ""
	}
	for _, d := range dirs {
		if member == "" && r.decls[d][name] || member != "" && r.hasMember(d, name, member) {
			return ""
		}
	}
	what := name
	if member != "" {
		what = name + "." + member
	}
	return "`" + span + "`: package " + pkg + " (" + strings.Join(dirs, ", ") + ") declares no " + what
}

// checkCommand checks a span or code line that runs hyfed: the command it
// names and the flags it gives. It returns the command ("" if the text runs
// no hyfed command) and what is wrong.
func (r *repo) checkCommand(text string) (string, []string) {
	var last string
	var msgs []string
	for _, seg := range splitShell(text) {
		f := strings.Fields(seg)
		start := -1
		for i, w := range f {
			if hyfedCmdRE.MatchString(w) {
				start = i
				break
			}
		}
		if start < 0 || start+1 >= len(f) {
			continue
		}
		c := f[start+1]
		if !commandRE.MatchString(c) {
			continue // a placeholder (<command>), a flag, a quoted word
		}
		if start > 0 && !strings.HasSuffix(f[start-1], "=") && !isCommandPrefix(f[:start]) {
			continue // "the hyfed step", not a command line
		}
		if !r.commands[c] {
			msgs = append(msgs, "`"+strings.Join(f[start:start+2], " ")+"`: cmd/hyfed has no command "+c)
			continue
		}
		last = c
		for _, w := range f[start+2:] {
			if strings.HasPrefix(w, "#") {
				break
			}
			fm := flagTokRE.FindStringSubmatch(w)
			if fm == nil {
				continue
			}
			if !r.knownFlag(c, fm[1]) {
				msgs = append(msgs, "`hyfed "+c+" ... "+w+"`: hyfed "+c+" has no flag --"+fm[1])
			}
		}
	}
	return last, msgs
}

// isCommandPrefix reports whether the words before hyfed on a command line
// are what may precede a command: environment assignments, nice, sudo, a
// prompt.
func isCommandPrefix(words []string) bool {
	for _, w := range words {
		switch {
		case strings.Contains(w, "=") && !strings.HasPrefix(w, "-"):
		case w == "nice" || w == "sudo" || w == "$" || w == "-n" || w == "10" || w == "time":
		default:
			return false
		}
	}
	return true
}

func (r *repo) knownFlag(cmd, name string) bool {
	switch name {
	case "h", "help":
		return true
	}
	fl := r.flags[cmd]
	if fl == nil {
		return true // a command without flags of its own (data fetch): nothing to check against
	}
	return fl[name]
}

// splitShell cuts a command line at the shell's separators.
func splitShell(s string) []string {
	return shellSepRE.Split(s, -1)
}
