package tests

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestUtilitiesClientLock runs ovsdb-client lock, steal and unlock with
// Debian's tool and govs' against the same server, Debian's and govs':
// a holder, a waiter and a thief, and requires the same replies and
// notifications from both tools. (An unlock by a client that holds
// nothing gets an error reply, which neither prints: nothing to wait for.)
func TestUtilitiesClientLock(t *testing.T) {
	ours := govsUtility(t, "ovsdb-client")
	for _, kind := range []string{"debian", "govs"} {
		p := ovsdbStart(t, ovsdbOpts{kind: kind})
		db := "unix:" + p.sock
		var outs [2][3]string
		for j, tool := range []string{ovsdbClient, ours} {
			lock := "L" + string(rune('a'+j))
			start := func(args ...string) (*exec.Cmd, *lockedBuffer) {
				out := &lockedBuffer{}
				cmd := exec.Command(tool, args...)
				cmd.Stdout = out
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
				return cmd, out
			}
			waitFor := func(out *lockedBuffer, want string) {
				ovsdbWait(t, 10*time.Second, tool+" to print "+want, func() bool { return strings.Contains(out.String(), want) })
			}
			_, holder := start("lock", db, lock)
			waitFor(holder, `{"locked":true}`)
			_, waiter := start("lock", db, lock)
			waitFor(waiter, `{"locked":false}`)
			thiefCmd, thief := start("steal", db, lock)
			waitFor(thief, `{"locked":true}`)
			waitFor(holder, "stolen\n")
			// Once the thief is gone the lock goes to a waiting client.
			thiefCmd.Process.Kill()
			thiefCmd.Wait()
			waitFor(holder, "locked\n[\""+lock+"\"]\n")
			first := func(s string, n int) string {
				lines := strings.SplitAfter(s, "\n")
				return strings.ReplaceAll(strings.Join(lines[:min(n, len(lines))], ""), lock, "L")
			}
			outs[j] = [3]string{first(holder.String(), 5), first(waiter.String(), 1), first(thief.String(), 1)}
		}
		if outs[0] != outs[1] {
			t.Errorf("%s server: lock outputs differ\ndebian's: %q\ngovs': %q", kind, outs[0], outs[1])
		}
	}
}
