package tests

import (
	"bytes"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer collects a process's output while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// monitorNormRe matches what differs between two monitors of the same
// changes: the time --timestamp prints, and the uuid prefixes HTML links show.
var monitorNormRe = regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}$|"time": ?"[^"]*"|>[0-9a-f]{8}</a>`)

func monitorNormalize(s string) string {
	return monitorNormRe.ReplaceAllString(ovsdbNormalize(s, false), "<x>")
}

// TestUtilitiesClientMonitor runs Debian's ovsdb-client and govs' side by
// side as monitors of the same server, Debian's and govs', through the
// same changes, and requires the same output: every format, --timestamp,
// --no-headings, column and event selections, ALL, monitor-cond and
// monitor-cond-since (with and without a last transaction id). Each
// change touches one row per table, since OVS prints a table's rows in
// hash order.
func TestUtilitiesClientMonitor(t *testing.T) {
	ours := govsUtility(t, "ovsdb-client")
	for _, kind := range []string{"debian", "govs"} {
		p := ovsdbStart(t, ovsdbOpts{kind: kind})
		p.mustVsctl("add-br", "br0")
		db := "unix:" + p.sock
		cases := [][]string{
			{"monitor", db, "Open_vSwitch", "Bridge", "name,datapath_type"},
			{"--timestamp", "-f", "list", "monitor", db, "Bridge", "name,datapath_type,_version"},
			{"-f", "csv", "monitor", db, "Bridge", "name,datapath_type"},
			{"-f", "json", "monitor", db, "Bridge", "name,datapath_type"},
			{"--timestamp", "-f", "html", "--no-headings", "monitor", db, "Bridge", "name,datapath_type"},
			{"-f", "json", "--pretty", "monitor", db, "Bridge", "name,!insert", "datapath_type,!initial,!delete"},
			{"--no-headings", "monitor", db, "ALL"},
			{"--timestamp", "--data=json", "monitor-cond", db, `[["name","!=","br9"]]`, "Bridge", "name,datapath_type,ports"},
			{"monitor-cond-since", db, `[]`, "Bridge", "name,datapath_type"},
			{"-f", "json", "monitor-cond-since", db, "00000000-0000-0000-0000-000000000000", `[["name","!=","br9"]]`, "Bridge", "name,datapath_type"},
			{"--timestamp", "-f", "csv", "monitor-cond-since", db, "Open_vSwitch", `[]`, "Bridge", "name,datapath_type,!delete"},
		}
		type proc struct {
			cmd *exec.Cmd
			out *lockedBuffer
		}
		procs := make([][2]proc, len(cases))
		for i, args := range cases {
			for j, tool := range []string{ovsdbClient, ours} {
				pr := proc{exec.Command(tool, args...), &lockedBuffer{}}
				pr.cmd.Stdout = pr.out
				if err := pr.cmd.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { pr.cmd.Process.Kill(); pr.cmd.Wait() })
				procs[i][j] = pr
			}
		}
		every := func(what string, cond func(out string) bool) {
			ovsdbWait(t, 10*time.Second, what, func() bool {
				for i := range procs {
					for j := range procs[i] {
						if !cond(procs[i][j].out.String()) {
							return false
						}
					}
				}
				return true
			})
		}
		every("monitors to print br0", func(out string) bool { return strings.Contains(out, "br0") })
		p.mustVsctl("set", "Bridge", "br0", "datapath_type=netdev")
		p.mustVsctl("add-br", "br1")
		p.mustVsctl("del-br", "br1")
		// Every monitor shows br0's last change, so all came before it.
		p.mustVsctl("set", "Bridge", "br0", "datapath_type=system")
		every("monitors to print the last change", func(out string) bool { return strings.Contains(out, "system") })
		for i, args := range cases {
			d, g := monitorNormalize(procs[i][0].out.String()), monitorNormalize(procs[i][1].out.String())
			if d != g {
				t.Errorf("%s server: ovsdb-client %s differs\ndebian's:\n%s\ngovs':\n%s", kind, strings.Join(args, " "), d, g)
			}
			procs[i][0].cmd.Process.Kill()
			procs[i][1].cmd.Process.Kill()
		}
	}
}
