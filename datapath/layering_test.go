package datapath

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The packet path sits below the daemon and the database: nothing under
// datapath/ or netdev/ imports vswitchd/ or ovsdb/ (the upcall is an
// interface the datapath defines and ofproto implements).
func TestLayering(t *testing.T) {
	fset := token.NewFileSet()
	for _, root := range []string{".", "../netdev"} {
		checkImports(t, fset, root)
	}
}

func checkImports(t *testing.T, fset *token.FileSet, root string) {
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			for _, banned := range []string{"github.com/govs/govs/vswitchd", "github.com/govs/govs/ovsdb"} {
				if p == banned || strings.HasPrefix(p, banned+"/") {
					t.Errorf("%s imports %s", filepath.Join("datapath", path), p)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
