package server

import (
	"os"
	"syscall"
	"testing"
)

// A punix remote's socket is 0750 whatever the umask, as ovsdb-server's.
func TestPunixModeIgnoresUmask(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	_, sock := testServer(t, Options{})
	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o750 {
		t.Fatalf("%s: mode %v, want a socket with 0750", sock, fi.Mode())
	}
}
