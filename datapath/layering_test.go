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

// The datapath sits below the daemon and the database: nothing under
// datapath/ imports vswitchd/ or ovsdb/ (the upcall is an interface the
// datapath defines and ofproto implements).
func TestLayering(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
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
					t.Errorf("datapath/%s imports %s", path, p)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
