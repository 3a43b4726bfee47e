package tests

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// rstpNormalize blanks in rstp/show what differs between two bridges of
// the same shape: names, addresses and port numbers, and the order of the
// port lines (OVS prints them in hash order).
func rstpNormalize(s string, names ...string) string {
	for _, n := range names {
		// Names are padded to 11 columns in the port lines.
		s = regexp.MustCompile(regexp.QuoteMeta(n)+` *`).ReplaceAllString(s, "PORT ")
	}
	for _, r := range []struct{ re, with string }{
		{`([0-9a-f]{2}:){5}[0-9a-f]{2}`, "MAC"},
		{`(?m)^---- \S+ ----$`, "---- B ----"},
		{`(\d+)\.\d+\n`, "$1.N\n"},
	} {
		s = regexp.MustCompile(r.re).ReplaceAllString(s, r.with)
	}
	lines := strings.Split(s, "\n")
	var rows []string
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "  PORT") {
			rows = append(rows, lines[i])
			lines = append(lines[:i], lines[i+1:]...)
		}
	}
	slices.Sort(rows)
	return strings.Join(lines, "\n") + strings.Join(rows, "\n")
}

// TestVswitchdRSTPDebian: a govs bridge and a Debian ovs-vswitchd bridge
// (netdev datapath, its own namespace) joined by two veth pairs run RSTP
// together. With govs the root, Debian's bridge has a root port and an
// alternate; with Debian's the root, govs' has, and its rstp/show reads
// as Debian's did (names, addresses and numbers normalised); the bridge
// and port status columns have the keys Debian's have.
func TestVswitchdRSTPDebian(t *testing.T) {
	t.Parallel()
	e := vswNewEnv(t)
	p := vswUniq()
	nsD, br := p+"-d", p+"br"
	m := [2]string{p + "m0", p + "m1"}
	vswClaim(t, nsD, br, m[0], m[1])
	vswRun("ip", "netns", "del", nsD)
	t.Cleanup(func() {
		vswRun("ip", "netns", "del", nsD)
		vswRun("ip", "link", "del", m[0])
		vswRun("ip", "link", "del", m[1])
	})
	for _, cmd := range [][]string{
		{"ip", "netns", "add", nsD},
		{"ip", "link", "add", m[0], "type", "veth", "peer", "name", "d0", "netns", nsD},
		{"ip", "link", "add", m[1], "type", "veth", "peer", "name", "d1", "netns", nsD},
		{"ip", "-n", nsD, "link", "set", "lo", "up"},
		{"ip", "-n", nsD, "link", "set", "d0", "up"},
		{"ip", "-n", nsD, "link", "set", "d1", "up"},
		{"ip", "link", "set", m[0], "up"},
		{"ip", "link", "set", m[1], "up"},
	} {
		if out, err := vswRun(cmd[0], cmd[1:]...); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	d := startDebSwitch(t, nsD)
	d.vsctl("add-br", "br0", "--", "set", "bridge", "br0", "datapath_type=netdev", "other_config:hwaddr=02:00:00:00:99:02",
		"rstp_enable=true", "--", "add-port", "br0", "d0", "--", "add-port", "br0", "d1")
	e.mustVsctl("add-br", br, "--", "set", "bridge", br, "other_config:hwaddr=02:00:00:00:99:01", "rstp_enable=true",
		"other_config:rstp-priority=4096", "--", "add-port", br, m[0], "--", "add-port", br, m[1])

	rows := func(show string) []string {
		var r []string
		for _, row := range rstpRow.FindAllStringSubmatch(show, -1) {
			r = append(r, row[2]+" "+row[3])
		}
		slices.Sort(r)
		return r
	}
	settled := func(show string) bool {
		return slices.Equal(rows(show), []string{"Alternate Discarding", "Root Forwarding"})
	}
	vswWait(t, 15*time.Second, "Debian's bridge to take a root port and an alternate", func() bool {
		return settled(d.appctl("rstp/show", "br0"))
	})
	vswWait(t, 15*time.Second, "govs' bridge to be the root, both ports forwarding", func() bool {
		show := e.mustAppctl("rstp/show", br)
		return strings.Contains(show, "This bridge is the root") &&
			slices.Equal(rows(show), []string{"Designated Forwarding", "Designated Forwarding"})
	})
	debShow := d.appctl("rstp/show", "br0")

	// Debian's bridge becomes the root: the roles swap. (Both at 32768
	// in between: govs' lower address keeps it the root.)
	e.mustVsctl("set", "bridge", br, "other_config:rstp-priority=32768")
	d.vsctl("set", "bridge", "br0", "other_config:rstp-priority=4096")
	vswWait(t, 15*time.Second, "govs' bridge to take a root port and an alternate", func() bool {
		return settled(e.mustAppctl("rstp/show", br))
	})
	vswWait(t, 15*time.Second, "Debian's bridge to be the root", func() bool {
		return strings.Contains(d.appctl("rstp/show", "br0"), "This bridge is the root")
	})
	got := rstpNormalize(e.mustAppctl("rstp/show", br), m[0], m[1])
	want := rstpNormalize(debShow, "d0", "d1")
	if got != want {
		t.Errorf("govs' rstp/show differs from Debian's (normalised)\ngovs:\n%s\nDebian:\n%s", got, want)
	}

	keys := func(out string) []string {
		k := regexp.MustCompile(`(rstp_\w+)=`).FindAllStringSubmatch(out, -1)
		var r []string
		for _, x := range k {
			r = append(r, x[1])
		}
		return r
	}
	for _, col := range [][]string{{"bridge", br, "br0", "rstp_status"}, {"port", m[0], "d0", "rstp_status"}, {"port", m[0], "d0", "rstp_statistics"}} {
		vswWait(t, 15*time.Second, col[0]+" "+col[3]+" to be written", func() bool {
			out, _ := e.vsctl("get", col[0], col[1], col[3])
			return len(keys(out)) > 0
		})
		g, _ := e.vsctl("get", col[0], col[1], col[3])
		w := d.vsctl("get", col[0], col[2], col[3])
		if !slices.Equal(keys(g), keys(w)) {
			t.Errorf("%s %s: govs has %v, Debian %v", col[0], col[3], keys(g), keys(w))
		}
	}
}
