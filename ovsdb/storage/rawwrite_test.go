package storage

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSyncData: fdatasync of a written file succeeds, and of a closed file
// reports an error rather than claiming durability.
func TestSyncData(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := writeAt(f, []byte("OVSDB JSON 0 x\n"), 0); err != nil {
		t.Fatal(err)
	}
	if err := syncData(f); err != nil {
		t.Fatalf("syncData: %v", err)
	}
	f.Close()
	if err := syncData(f); err == nil {
		t.Fatal("syncData of a closed file reported success")
	}
}
