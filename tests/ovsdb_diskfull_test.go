package tests

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestOvsdbDiskFull runs the server with its database file on a small
// tmpfs that the test fills, against Debian's ovsdb-server doing the same:
// a transaction whose record cannot be written fails with "I/O error" and
// leaves nothing behind (not in list-br, not in a monitor's updates, not
// after a restart); every transaction acknowledged before is kept; once
// there is room again, writes succeed.
func TestOvsdbDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("TestOvsdbDiskFull mounts a tmpfs: run as root")
	}
	for _, kind := range []string{"debian", "govs"} {
		t.Run(kind, func(t *testing.T) {
			dir := ovsdbKeptDir(t, "ovsdbt-", kind+" server")
			fs := filepath.Join(dir, "fs")
			if err := os.Mkdir(fs, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := unix.Mount("tmpfs", fs, "tmpfs", 0, "size=256k"); err != nil {
				t.Fatalf("mount tmpfs: %v", err)
			}
			t.Cleanup(func() { unix.Unmount(fs, unix.MNT_DETACH) })
			// The file lives on the tmpfs; the socket, log and pidfile
			// beside the link, on a file system with room for them.
			if err := os.Symlink(filepath.Join(fs, "conf.db"), filepath.Join(dir, "conf.db")); err != nil {
				t.Fatal(err)
			}
			if kind == "govs" {
				if out, err := exec.Command(ovsdbTool, "create", filepath.Join(dir, "conf.db"), ovsdbVSwitchSch).CombinedOutput(); err != nil {
					t.Fatalf("ovsdb-tool create: %v\n%s", err, out)
				}
			}
			p := ovsdbStart(t, ovsdbOpts{kind: kind, dir: dir})
			p.mustVsctl("init")
			p.mustVsctl("add-br", "br0")
			mon := ovsdbMonitor(t, "monitor", "unix:"+p.sock, "Open_vSwitch", "Bridge", "name")
			ovsdbExpectLines(t, "monitor", mon, "row,action,name", "<uuid>,initial,br0")

			filler := filepath.Join(fs, "filler")
			diskFill(t, filler, 4096)
			// Room for a few records is left.
			// ovsdb-server's error, which names the file as given.
			ioErr := `{"details":"` + filepath.Join(dir, "conf.db") + `: write failed","error":"I/O error","io-error":"No space left on device"}`
			want := []string{"br0"}
			// Clients at once: some may fit, the others fail; which is
			// which must hold after.
			var mu sync.Mutex
			var wg sync.WaitGroup
			for i := 1; i <= 8; i++ {
				wg.Add(1)
				go func(name string) {
					defer wg.Done()
					r := p.vsctl("--no-wait", "add-br", name)
					mu.Lock()
					defer mu.Unlock()
					switch {
					case r.code == 0:
						want = append(want, name)
					case !strings.Contains(r.stderr, "ovs-vsctl: transaction error: "+ioErr):
						t.Errorf("ovs-vsctl add-br %s: exit %d: %s", name, r.code, r.stderr)
					}
				}(fmt.Sprintf("p%d", i))
			}
			wg.Wait()
			if t.Failed() {
				t.FailNow()
			}
			failed := ""
			for i := 1; i <= 200 && failed == ""; i++ {
				name := fmt.Sprintf("br%d", i)
				r := p.vsctl("--no-wait", "add-br", name)
				switch {
				case r.code == 0:
					want = append(want, name)
				case strings.Contains(r.stderr, "ovs-vsctl: transaction error: "+ioErr):
					failed = name
				default:
					t.Fatalf("ovs-vsctl add-br %s: exit %d: %s", name, r.code, r.stderr)
				}
			}
			if failed == "" {
				t.Fatalf("200 bridges added on a full file system")
			}
			t.Logf("acknowledged on the full file system: %v; failed: the others and %s", want[1:], failed)
			if got := listBr(t, p); got != strings.Join(slices.Sorted(slices.Values(want)), "\n") {
				t.Fatalf("after %s failed, list-br:\n%s\nwant:\n%s", failed, got, strings.Join(slices.Sorted(slices.Values(want)), "\n"))
			}
			if r := p.vsctl("--no-wait", "add-br", failed); r.code == 0 {
				t.Fatalf("add-br %s succeeded on a full file system", failed)
			}

			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
			p.mustVsctl("add-br", "after")
			want = append(want, "after")
			// The monitor saw the acknowledged bridges, and the failed
			// ones never.
			seen := map[string]bool{}
			for len(seen) < len(want)-1 {
				select {
				case l := <-mon:
					if l == "row,action,name" {
						continue
					}
					name, ok := strings.CutPrefix(l, "<uuid>,insert,")
					if !ok || !slices.Contains(want, name) {
						t.Fatalf("monitor: %q; acknowledged: %v", l, want)
					}
					seen[name] = true
				case <-time.After(vswTimeout):
					t.Fatalf("monitor saw %v; acknowledged: %v", seen, want)
				}
			}

			p.stop()
			p.start()
			if got := listBr(t, p); got != strings.Join(slices.Sorted(slices.Values(want)), "\n") {
				t.Fatalf("after a restart, list-br:\n%s\nwant:\n%s", got, strings.Join(slices.Sorted(slices.Values(want)), "\n"))
			}
			p.stop()
			if out, err := exec.Command(ovsdbTool, "show-log", filepath.Join(dir, "conf.db")).CombinedOutput(); err != nil {
				t.Fatalf("Debian's ovsdb-tool show-log: %v\n%s", err, out)
			}
		})
	}
}

// diskFill writes path until its file system has no room left but leave
// bytes.
func diskFill(t *testing.T, path string, leave int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			fi, err := f.Stat()
			if err == nil {
				err = f.Truncate(max(fi.Size()-leave, 0))
			}
			if err != nil {
				t.Fatal(err)
			}
			return
		}
	}
}

func listBr(t *testing.T, p *ovsdbProc) string {
	t.Helper()
	return strings.TrimSpace(p.mustVsctl("list-br"))
}
