package tests

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// logFileTimeRe matches the time that starts a log file line.
var logFileTimeRe = regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\|`)

// TestUtilitiesVsctlSyslog runs the same ovs-vsctl commands, Debian's and
// govs', with --syslog-method=unix:SOCKET (and --log-file, -v) against the
// same server, and requires the same syslog datagrams (priority, sequence
// numbers, modules, texts: "Called as ..." at INFO for commands that may
// write, a fatal error at ERR), the same log file lines and the same
// stderr and exit status. Paths of the tools and times are normalised.
func TestUtilitiesVsctlSyslog(t *testing.T) {
	ours := govsUtility(t, "ovs-vsctl")
	p := ovsdbStart(t, ovsdbOpts{kind: "govs"})
	dir := t.TempDir()
	sock := filepath.Join(dir, "syslog")
	ux, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer ux.Close()
	// drain returns the datagrams queued, without waiting: the tool has
	// exited, so every one it sent is already there. (The queue must not
	// fill: a unix datagram sender blocks once max_dgram_qlen are queued.)
	raw, err := ux.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	drain := func() []string {
		var got []string
		buf := make([]byte, 1<<16)
		for {
			n := -1
			raw.Read(func(fd uintptr) bool {
				n, _, _ = unix.Recvfrom(int(fd), buf, unix.MSG_DONTWAIT)
				return true
			})
			if n < 0 {
				return got
			}
			got = append(got, string(buf[:n]))
		}
	}
	db := "--db=unix:" + p.sock
	logFile := filepath.Join(dir, "vsctl.log")
	steps := [][]string{
		{db, "--no-wait", "add-br", "br0"},
		{db, "--no-wait", "list-br"},
		{db, "--no-wait", "del-br", "nonexistent"},
		{db, "--no-wait", "--", "--may-exist", "add-br", "br0", "--", "set", "bridge", "br0", `other_config:x="a b"`},
		{db, "--no-wait", "--dry-run", "del-br", "br0"},
		{"-vconsole:info", db, "--no-wait", "add-br", "bx", "--", "del-br", "bx"},
		{"--log-file=" + logFile, db, "--no-wait", "add-br", "by", "--", "del-br", "by"},
		{"-vsyslog:off", db, "--no-wait", "del-br", "br0"},
		{"--db=unix:" + filepath.Join(dir, "nonexistent"), "--no-wait", "add-br", "bz"},
	}
	// Each tool runs the whole sequence, which ends where it started.
	type result struct {
		r        ovsdbResult
		syslog   string
		fileLogs string
	}
	var res [2][]result
	for j, tool := range []string{ovsdbVsctl, ours} {
		for _, st := range steps {
			os.Remove(logFile)
			drain()
			r := ovsdbRun(tool, append([]string{"--syslog-method=unix:" + sock}, st...)...)
			norm := func(s string) string {
				return ovsdbNormalizeLog(strings.ReplaceAll(s, "Called as "+tool, "Called as ovs-vsctl"))
			}
			r.stderr = norm(r.stderr)
			b, _ := os.ReadFile(logFile)
			fileLogs := logFileTimeRe.ReplaceAllString(norm(string(b)), "<time>|")
			res[j] = append(res[j], result{r, norm(strings.Join(drain(), "\n")), fileLogs})
		}
	}
	for i, st := range steps {
		if res[0][i] != res[1][i] {
			t.Errorf("ovs-vsctl %s differs\ndebian's: %+v\ngovs': %+v", strings.Join(st, " "), res[0][i], res[1][i])
		}
	}
}
