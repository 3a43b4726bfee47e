package tests

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOpenFlowSelectGroupDpHash: a select group without a method, and one
// with selection_method=dp_hash, hash in the datapath and recirculate, as
// OVS 3.1's (issue 12). TCP connections from a to b and c (one address
// and MAC) through a group of two buckets, on govs and on Debian's
// ovs-vswitchd alike: each connection lands in the same namespace on both
// (the same dp_hash), the datapath flows are one first pass that hashes
// and recirculates and one second pass per hash value seen, the same
// values as Debian's, not one per connection, and the group's bucket
// counters count what each namespace received.
func TestOpenFlowSelectGroupDpHash(t *testing.T) {
	// The same addresses on both (in namespaces of their own): the l4
	// hash reads them whole.
	deb, govs := startSwitchPair(t, "gdhd", "10.198.0", "gdho", "10.198.0")
	const conns = 24
	type result struct {
		landed    []string // per connection, "b" or "c"
		dumps     string   // dpif/dump-flows
		hashes    []string // the second pass's dp_hash values
		firstPass string
		stats     string
		traces    []string // ofproto/trace --names of the group's flows
	}
	phases := []struct {
		group, hash string
		port        int // the connections' first source port
	}{
		{"group_id=1,type=select,bucket=bucket_id:0,output:2,bucket=bucket_id:1,output:4", "sym_l4(0)", 42000},
		{"group_id=2,type=select,selection_method=dp_hash,selection_method_param=0x1234,bucket=bucket_id:0,output:2,bucket=bucket_id:1,output:4", "l4(4660)", 43000},
	}
	run := func(s *ofSwitch, subnet string) []result {
		c := vswAddPrefixedNS(t, strings.TrimSuffix(s.br, "0"), "c", subnet+".2/24")
		s.vsctl("add-port", s.br, c.Host, "--", "set", "interface", c.Host, "ofport_request=4")
		s.names[c.Host] = "C"
		const mac = "02:00:00:00:19:02"
		for _, ns := range []*vswNS{s.b, c} {
			ns.mustExec("ip", "link", "set", "eth0", "address", mac)
		}
		s.a.mustExec("ip", "neigh", "replace", subnet+".2", "lladdr", mac, "dev", "eth0")
		// And b and c know a's, so that nothing but the SYNs and the
		// resets crosses the switch.
		macA := strings.Fields(s.a.mustExec("cat", "/sys/class/net/eth0/address"))[0]
		for _, ns := range []*vswNS{s.b, c} {
			ns.mustExec("ip", "neigh", "replace", subnet+".1", "lladdr", macA, "dev", "eth0")
		}
		// Debian's switch sends a veth's frames on as they are: their
		// TCP checksums must be whole.
		for _, ns := range []*vswNS{s.a, s.b, c} {
			ns.mustExec("ethtool", "-K", "eth0", "tx", "off")
		}
		vswWait(t, vswTimeout, s.br+"'s port 4 to be live", func() bool {
			out, rc := s.ofctl("-O", "OpenFlow13", "dump-ports-desc", s.br)
			return rc == 0 && strings.Count(out, "state:      LIVE") == 5
		})
		var rs []result
		for gi, ph := range phases {
			if out, rc := s.ofctl("-O", "OpenFlow15", "add-group", s.br, ph.group); rc != 0 {
				t.Fatalf("add-group: %s", out)
			}
			s.replaceFlows(fmt.Sprintf("priority=10,in_port=1,ip,actions=group:%d", gi+1), "priority=10,in_port=1,arp,actions=output:2,output:4",
				"priority=10,in_port=2,actions=output:1", "priority=10,in_port=4,actions=output:1")
			var r result
			for i := range conns {
				b0, c0 := snmpCounter(t, s.b, "Tcp", "OutRsts"), snmpCounter(t, c, "Tcp", "OutRsts")
				// A SYN from a fixed source port to a closed port:
				// the namespace it lands in answers with a reset.
				vswInNS(t, s.a.Name, func() {
					d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(subnet + ".1"), Port: ph.port + i}}
					conn, err := d.Dial("tcp4", subnet+".2:9")
					if err == nil {
						conn.Close()
						t.Fatalf("connection %d: accepted", i)
					}
					if !errors.Is(err, syscall.ECONNREFUSED) {
						t.Fatalf("connection %d: %v\n%s", i, err, s.appctl("dpif/dump-flows", s.br))
					}
				})
				var db, dc int
				vswWait(t, vswTimeout, fmt.Sprintf("connection %d's reset to be counted", i), func() bool {
					db, dc = snmpCounter(t, s.b, "Tcp", "OutRsts")-b0, snmpCounter(t, c, "Tcp", "OutRsts")-c0
					return db+dc >= 1
				})
				if db+dc != 1 {
					t.Fatalf("connection %d: %d resets from b, %d from c", i, db, dc)
				}
				r.landed = append(r.landed, map[bool]string{true: "b", false: "c"}[db == 1])
			}
			r.dumps = s.appctl("dpif/dump-flows", s.br)
			first := regexp.MustCompile(`(?m)^recirc_id\(0\),in_port\(\d+\),packet_type\(ns=0,id=0\),eth_type\(0x0800\),ipv4\(frag=no\), .*actions:(hash\([^)]*\)\)),recirc\((0x[0-9a-f]+)\)$`)
			m := first.FindAllStringSubmatch(r.dumps, -1)
			if len(m) != 1 {
				t.Fatalf("%s: first-pass flows %q in\n%s", s.br, m, r.dumps)
			}
			r.firstPass = m[0][1]
			second := regexp.MustCompile(`(?m)^recirc_id\(` + m[0][2] + `\),dp_hash\((0x[0-9a-f]+)/0xf\),in_port\(\d+\),packet_type\(ns=0,id=0\),eth_type\(0x0800\),ipv4\(frag=no\), .*actions:\d+$`)
			for _, m := range second.FindAllStringSubmatch(r.dumps, -1) {
				r.hashes = append(r.hashes, m[1])
			}
			slices.Sort(r.hashes)
			// Both switches credit a flow's packets to its group now
			// and then: wait for every SYN to be counted.
			vswWait(t, vswTimeout, s.br+"'s group to count the SYNs", func() bool {
				out, _ := s.ofctl("-O", "OpenFlow13", "dump-group-stats", s.br, fmt.Sprintf("group_id=%d", gi+1))
				m := regexp.MustCompile(`packet_count=(\d+),byte_count=\d+,bucket0:packet_count=(\d+),byte_count=\d+,bucket1:packet_count=(\d+)`).FindStringSubmatch(out)
				if m == nil {
					t.Fatalf("dump-group-stats: %s", out)
				}
				r.stats = fmt.Sprintf("group %s, bucket0 %s, bucket1 %s", m[1], m[2], m[3])
				return m[1] == strconv.Itoa(conns)
			})
			// ofproto/trace: a flow without dp_hash freezes at the
			// group; one with it picks; the state thawed runs the
			// group and picks too.
			pkt := "in_port=1,tcp,nw_src=" + subnet + ".1,nw_dst=" + subnet + ".2,tp_src=1,tp_dst=2"
			id := regexp.MustCompile(`recirc\((0x[0-9a-f]+)\)`)
			var firstOut string
			for _, f := range []string{pkt, "dp_hash=0x23," + pkt, "recirc_id=ID,dp_hash=0x24," + pkt} {
				if m := id.FindStringSubmatch(firstOut); m != nil {
					f = strings.Replace(f, "ID", m[1], 1)
				}
				out, rc := s.traceArgsRC("--names", s.br, f)
				if firstOut == "" {
					firstOut = out
				}
				out = s.normalizeOfctl(out)
				r.traces = append(r.traces, fmt.Sprintf("%s(exit %d)", traceRecircID.ReplaceAllString(out, "${1}0xN"), rc))
			}
			rs = append(rs, r)
		}
		return rs
	}
	gs := run(govs, "10.198.0")
	ds := run(deb, "10.198.0")
	for i, ph := range phases {
		g, d := gs[i], ds[i]
		nb := strings.Count(strings.Join(g.landed, ""), "b")
		t.Logf("%s: govs sent %d connections to b, %d to c; %d second-pass flows; stats %s", ph.hash, nb, conns-nb, len(g.hashes), g.stats)
		if !slices.Contains(g.landed, "b") || !slices.Contains(g.landed, "c") {
			t.Errorf("%s: govs sent every connection one way: %v", ph.hash, g.landed)
		}
		if !slices.Equal(g.landed, d.landed) {
			t.Errorf("%s: connections landed in\ngovs:     %v\nDebian's: %v", ph.hash, g.landed, d.landed)
		}
		if want := "hash(" + ph.hash + ")"; g.firstPass != want || d.firstPass != want {
			t.Errorf("first pass: govs %q, Debian's %q, want %q", g.firstPass, d.firstPass, want)
		}
		// One second-pass flow per hash value (16 at most), the same
		// values as Debian's.
		if len(g.hashes) == 0 || len(g.hashes) > 16 || !slices.Equal(g.hashes, d.hashes) {
			t.Errorf("%s: second-pass dp_hash values: govs %v, Debian's %v:\n%s\nDebian's:\n%s", ph.hash, g.hashes, d.hashes, g.dumps, d.dumps)
		}
		if want := fmt.Sprintf("group %d, bucket0 %d, bucket1 %d", conns, nb, conns-nb); g.stats != want || d.stats != want {
			t.Errorf("%s: group stats: govs %s, Debian's %s, want %s", ph.hash, g.stats, d.stats, want)
		}
		for j := range g.traces {
			if g.traces[j] != d.traces[j] {
				t.Errorf("%s: ofproto/trace:\ngovs:\n%s\nDebian's:\n%s", ph.hash, g.traces[j], d.traces[j])
			}
		}
		if i == 0 {
			t.Logf("traces:\n%s", strings.Join(g.traces, "\n"))
		}
	}
}
