package tests

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// ovsdbStep is one ovs-vsctl invocation of a differential test. "{PORT}" in
// an argument is replaced by a free TCP port chosen per server.
type ovsdbStep struct {
	args []string
	// sorted compares list/find output record by record, ignoring order.
	sorted bool
}

func vs(args ...string) ovsdbStep     { return ovsdbStep{args: args} }
func vsList(args ...string) ovsdbStep { return ovsdbStep{args: args, sorted: true} }

// TestOvsdbVsctlDifferential runs the same ovs-vsctl commands against
// Debian's ovsdb-server and govs' and compares stdout, stderr and exit codes.
func TestOvsdbVsctlDifferential(t *testing.T) {
	steps := []ovsdbStep{
		vs("init"),
		vs("show"),
		vs("add-br", "br0"),
		vs("add-br", "br1"),
		vs("add-port", "br0", "p1"),
		vs("add-port", "br0", "p2", "--", "set", "Interface", "p2", "type=internal"),
		vs("add-bond", "br0", "bond0", "a", "b"),
		vs("add-bond", "br0", "bond1", "c", "d", "bond_mode=balance-slb", "lacp=active"),
		vs("list-br"),
		vs("list-ports", "br0"),
		vs("list-ifaces", "br0"),
		vs("port-to-br", "p1"),
		vs("iface-to-br", "a"),
		vs("br-exists", "br0"),
		vs("br-exists", "nope"),
		vs("add-br", "br0"),
		vs("--may-exist", "add-br", "br0"),
		vs("add-port", "br1", "p1"),
		vs("--may-exist", "add-port", "br0", "p1"),
		vs("del-port", "nope"),
		vs("--if-exists", "del-port", "nope"),
		vs("set", "Bridge", "br0", "other_config:hwaddr=00:11:22:33:44:55", "external_ids:k1=v1", "external_ids:k2=v2"),
		vs("get", "Bridge", "br0", "other_config"),
		vs("get", "Bridge", "br0", "other_config:hwaddr"),
		vs("get", "Bridge", "br0", "other_config:nope"),
		vs("--if-exists", "get", "Bridge", "br0", "other_config:nope"),
		vs("remove", "Bridge", "br0", "external_ids", "k1"),
		vs("get", "Bridge", "br0", "external_ids"),
		vs("add", "Bridge", "br0", "flood_vlans", "10", "20", "30"),
		vs("remove", "Bridge", "br0", "flood_vlans", "20"),
		vs("get", "Bridge", "br0", "flood_vlans"),
		vs("clear", "Bridge", "br0", "flood_vlans"),
		vs("get", "Bridge", "br0", "flood_vlans"),
		vs("set", "Port", "p1", "tag=10"),
		vs("get", "Port", "p1", "tag"),
		vs("set", "Port", "p1", "tag=5000"),
		vs("set", "Bridge", "br0", "fail_mode=bogus"),
		vs("set", "Bridge", "br0", "fail_mode=secure", "stp_enable=true"),
		vs("set", "Bridge", "br0", "nosuchcolumn=1"),
		vs("set", "Nope", "br0", "x=1"),
		vs("set", "Bridge", "nope", "stp_enable=true"),
		vs("set", "Interface", "p1", "ofport_request=70000"),
		vs("set", "Interface", "p1", "ofport_request=7"),
		vs("add", "Port", "p1", "trunks", "1", "2", "3"),
		vs("set", "Interface", "p2", "options:remote_ip=1.2.3.4", "options:key=flow"),
		vsList("find", "Port", "tag=10"),
		vsList("--columns=name,tag", "find", "Port", "tag!=10"),
		vsList("--columns=name", "list", "Port"),
		vsList("--columns=name,type,options", "list", "Interface"),
		vs("list", "Bridge", "br0"),
		vs("--columns=name,ports", "list", "Bridge", "br1"),
		vs("--id=@q", "create", "QoS", "type=linux-htb", "other_config:max-rate=1000000", "--", "set", "Port", "p1", "qos=@q"),
		vsList("--columns=type,other_config", "list", "QoS"),
		vs("--id=@m", "create", "Mirror", "name=m0", "select_all=true", "--", "add", "Bridge", "br0", "mirrors", "@m"),
		vs("get", "Mirror", "m0", "select_all"),
		vs("--", "--id=@nf", "create", "NetFlow", "targets=\"1.2.3.4:5566\"", "--", "set", "Bridge", "br1", "netflow=@nf"),
		vs("--dry-run", "add-br", "br9"),
		vs("list-br"),
		vs("add-br", "br2", "--", "set", "Bridge", "br2", "datapath_type=netdev", "--", "add-port", "br2", "p20"),
		vs("br-set-external-id", "br2", "xx", "yy"),
		vs("br-get-external-id", "br2"),
		vs("del-br", "br1"),
		vsList("--columns=name", "list", "Port"),
		vsList("--columns=targets", "list", "NetFlow"),
		vs("del-port", "br0", "bond0"),
		vsList("--columns=name", "list", "Interface"),
		// Output formats and options.
		vs("--format=table", "--columns=name,tag", "list", "Port", "p1"),
		vs("--format=csv", "--columns=name,other_config,flood_vlans", "list", "Bridge", "br0"),
		vs("--format=json", "--columns=name,tag,trunks", "list", "Port", "p1"),
		vs("--format=json", "--pretty", "--columns=name,tag,trunks,other_config", "list", "Port", "p1"),
		vs("--format=html", "--columns=name,type,options", "list", "Interface", "p2"),
		vs("--bare", "--columns=name,trunks", "list", "Port", "p1"),
		vs("--data=json", "--columns=name,trunks,other_config", "list", "Port", "p1"),
		vs("--format=table", "--no-headings", "--data=bare", "--columns=name,trunks", "list", "Port", "p1"),
		vs("--oneline", "get", "Port", "p1", "trunks", "--", "list-br"),
		vs("--format=bogus", "list", "Port"),
		// find conditions and wait-until (already true).
		vsList("--columns=name", "find", "Port", "trunks{>=}1"),
		vsList("--columns=name", "find", "Port", "trunks{in}[1,2,3,4]"),
		vsList("--columns=name,tag", "find", "Port", "tag>4"),
		vsList("--columns=name", "find", "Interface", "options:key=flow"),
		vsList("--columns=name", "find", "Interface", "type=internal", "name!=p2"),
		vs("find", "Port", "tag"),
		vs("find", "Port", "tag=bad"),
		vs("wait-until", "Port", "p1", "tag=10"),
		vs("wait-until", "Bridge", "br0", "fail_mode=secure"),
		// Errors.
		vs("get", "Port", "p1", "nosuch"),
		vs("get", "Port", "p1", "t"),
		vs("list", "Port", "nope"),
		vs("--if-exists", "list", "Port", "nope"),
		vs("bogus-cmd"),
		vs("list-br", "extra"),
		vs("--may-exist", "list-br"),
		vs("set", "Port", "p1", "other_config={a=b,c}"),
		vs("add", "Port", "p1", "tag", "1", "2"),
		vs("add", "Port", "p1", "tag", "7"),
		vs("add", "Port", "p1", "trunks", "7", "--", "remove", "Port", "p1", "trunks", "1", "--", "add", "Port", "p1", "trunks", "9"),
		vs("get", "Port", "p1", "trunks"),
		vs("remove", "Port", "p1", "name", "p1"),
		vs("clear", "Port", "p1", "name"),
		vs("create", "Port", "name=x"),
		vs("--id=x", "create", "Bridge", "name=x"),
		vs("set", "Bridge", "br0", "mirrors=@m"),
		vs("--all", "destroy", "Bridge", "br0"),
		vs("set-fail-mode", "br0", "bad"),
		vs("add-br", "brv", "br0", "5000"),
		vs("add-bond", "br0", "bo", "a"),
		vs("--may-exist", "add-bond", "br0", "p1", "a", "b"),
		vs("del-port", "br0", "br0"),
		// Fake bridges, controllers, fail-mode, SSL, auto-attach.
		vs("add-br", "brv", "br0", "5"),
		vs("--fake", "list-br"),
		vs("br-to-vlan", "brv"),
		vs("br-to-parent", "brv"),
		vs("add-port", "brv", "pv"),
		vs("get", "Port", "pv", "tag"),
		vs("port-to-br", "pv"),
		vs("list-ports", "brv"),
		vs("del-br", "brv"),
		vs("set-controller", "br0", "tcp:127.0.0.1:6653", "punix:/tmp/x.sock"),
		vs("get-controller", "br0"),
		vs("del-controller", "br0"),
		vs("set-ssl", "/a/key", "/a/cert", "/a/ca"),
		vs("get-ssl"),
		vs("del-ssl"),
		vs("set-fail-mode", "br0", "standalone"),
		vs("get-fail-mode", "br0"),
		vs("del-fail-mode", "br0"),
		vs("add-aa-mapping", "br0", "100", "200"),
		vs("get-aa-mapping", "br0"),
		vs("del-aa-mapping", "br0", "100", "200"),
		vs("list-ifaces", "br0"),
		vs("set-manager", "ptcp:{PORT}:127.0.0.1"),
		vs("get-manager"),
		vs("show"),
		vs("del-manager"),
		vs("get-manager"),
		vs("set", "Open_vSwitch", ".", "other_config:a=b", "external_ids:system-id=xyz"),
		vs("get", "Open_vSwitch", ".", "other_config", "external_ids"),
		vs("emer-reset"),
		vs("list-br"),
		vs("--columns=name,other_config,fail_mode", "list", "Bridge", "br0"),
		vs("del-br", "br0", "--", "del-br", "br2"),
		vsList("list", "Port"),
		vsList("list", "Interface"),
		vsList("list", "QoS"),
		vsList("list", "Mirror"),
		vs("show"),
		// Conntrack zones' timeout policies.
		vs("add-zone-tp", "netdev", "zone=5", "udp_first=1"),
		vs("--", "--id=@dp", "create", "Datapath", "datapath_version=0", "--", "set", "Open_vSwitch", ".", "datapaths:netdev=@dp"),
		vs("add-zone-tp", "netdev", "zone=5", "udp_first=1", "udp_single=2", "icmp_first=3", "tcp_unack=4"),
		vs("add-zone-tp", "netdev", "zone=5", "udp_first=9"),
		vs("--may-exist", "add-zone-tp", "netdev", "zone=5", "udp_first=9"),
		vs("add-zone-tp", "netdev", "zone=0x10", "udp_first=x", "icmp_reply=7"),
		vs("add-zone-tp", "netdev", "zone=6", "bogus=1"),
		vs("add-zone-tp", "netdev", "zone=70000", "udp_first=1"),
		vs("add-zone-tp", "netdev", "zone=7"),
		vs("add-zone-tp", "system", "zone=7", "udp_first=1"),
		vs("list-zone-tp", "netdev"),
		vs("list-zone-tp", "system"),
		vs("del-zone-tp", "netdev", "zone=9"),
		vs("--if-exists", "del-zone-tp", "netdev", "zone=9"),
		vs("del-zone-tp", "netdev", "zone=16"),
		vs("list-zone-tp", "netdev"),
		vsList("--columns=timeouts", "list", "CT_Timeout_Policy"),
	}
	// Debian's ovs-vsctl against Debian's server is the reference; Debian's
	// ovs-vsctl and govs' own against govs' server must print the same.
	ourVsctl := govsUtility(t, "ovs-vsctl")
	servers := []*ovsdbProc{ovsdbStart(t, ovsdbOpts{kind: "debian"}), ovsdbStart(t, ovsdbOpts{kind: "govs"}), ovsdbStart(t, ovsdbOpts{kind: "govs"})}
	tools := []string{ovsdbVsctl, ovsdbVsctl, ourVsctl}
	names := []string{"debian", "govs", "govs with govs' ovs-vsctl"}
	ports := make([]int, len(servers))
	for j := range ports {
		for ports[j] == 0 || slices.Contains(ports[:j], ports[j]) {
			ports[j] = ovsdbFreePort(t)
		}
	}
	for i, st := range steps {
		res := make([]ovsdbResult, len(servers))
		for j, p := range servers {
			args := []string{"--db=unix:" + p.sock, "--timeout=10", "--no-wait"}
			for _, a := range st.args {
				args = append(args, strings.ReplaceAll(a, "{PORT}", strconv.Itoa(ports[j])))
			}
			r := ovsdbRun(tools[j], args...)
			port := strconv.Itoa(ports[j])
			r.stdout = ovsdbNormalize(strings.ReplaceAll(r.stdout, port, "{PORT}"), st.sorted)
			if st.args[len(st.args)-1] == "show" {
				r.stdout = ovsdbSortTree(r.stdout)
			}
			r.stderr = ovsdbNormalizeLog(ovsdbNormalize(strings.ReplaceAll(r.stderr, port, "{PORT}"), false))
			res[j] = r
		}
		name := fmt.Sprintf("step %d: ovs-vsctl %s", i, strings.Join(st.args, " "))
		for j := 1; j < len(res); j++ {
			if res[0] != res[j] {
				t.Errorf("%s differs\ndebian: exit %d\nstdout:\n%s\nstderr:\n%s\n%s: exit %d\nstdout:\n%s\nstderr:\n%s",
					name, res[0].code, res[0].stdout, res[0].stderr, names[j], res[j].code, res[j].stdout, res[j].stderr)
			}
		}
	}
}

// ovsdbLogTimeRe matches the time stamp of a console log line.
var ovsdbLogTimeRe = regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\|`)

// ovsdbNormalizeLog drops the time stamps of log lines in a tool's output.
func ovsdbNormalizeLog(s string) string { return ovsdbLogTimeRe.ReplaceAllString(s, "<time>|") }

// TestOvsdbManagerRemote checks that set-manager opens a listener and
// del-manager closes it, live.
func TestOvsdbManagerRemote(t *testing.T) {
	p := ovsdbStart(t, ovsdbOpts{})
	p.mustVsctl("init")
	port := ovsdbFreePort(t)
	p.mustVsctl("set-manager", fmt.Sprintf("ptcp:%d:127.0.0.1", port))
	ovsdbWait(t, vswTimeout, "manager listener to open", func() bool { return ovsdbPortOpen(port) })

	// A client over TCP sees the same database.
	r := ovsdbRun(ovsdbVsctl, fmt.Sprintf("--db=tcp:127.0.0.1:%d", port), "--no-wait", "add-br", "brtcp")
	if r.code != 0 {
		t.Fatalf("ovs-vsctl over tcp: %s", r.stderr)
	}
	if out := p.mustVsctl("list-br"); out != "brtcp\n" {
		t.Fatalf("list-br: %q", out)
	}
	ovsdbWait(t, vswTimeout, "Manager status", func() bool {
		out := p.mustVsctl("get", "Manager", ".", "status:bound_port")
		return strings.TrimSpace(out) == fmt.Sprintf(`"%d"`, port)
	})

	p.mustVsctl("del-manager")
	ovsdbWait(t, vswTimeout, "manager listener to close", func() bool { return !ovsdbPortOpen(port) })

	// Unixctl remotes.
	if r := p.appctl("ovsdb-server/list-remotes"); r.stdout != "db:Open_vSwitch,Open_vSwitch,manager_options\npunix:"+p.sock+"\n" {
		t.Fatalf("list-remotes: %q %q", r.stdout, r.stderr)
	}
	port2 := ovsdbFreePort(t)
	if r := p.appctl("ovsdb-server/add-remote", fmt.Sprintf("ptcp:%d:127.0.0.1", port2)); r.code != 0 {
		t.Fatalf("add-remote: %s", r.stderr)
	}
	ovsdbWait(t, vswTimeout, "added remote to listen", func() bool { return ovsdbPortOpen(port2) })
	if r := p.appctl("ovsdb-server/remove-remote", fmt.Sprintf("ptcp:%d:127.0.0.1", port2)); r.code != 0 {
		t.Fatalf("remove-remote: %s", r.stderr)
	}
	ovsdbWait(t, vswTimeout, "removed remote to close", func() bool { return !ovsdbPortOpen(port2) })
	if r := p.appctl("ovsdb-server/remove-remote", "ptcp:1:127.0.0.1"); r.code == 0 || !strings.Contains(r.stderr, "no such remote") {
		t.Fatalf("remove-remote of an unknown remote: %+v", r)
	}
	if r := p.appctl("ovsdb-server/compact"); r.code != 0 {
		t.Fatalf("compact: %+v", r)
	}
	if r := p.appctl("ovsdb-server/compact", "nope"); r.code == 0 || !strings.Contains(r.stderr, "no database by that name") {
		t.Fatalf("compact nope: %+v", r)
	}
	if out := p.mustVsctl("list-br"); out != "brtcp\n" {
		t.Fatalf("list-br after compaction: %q", out)
	}
}

// TestOvsdbCrashLosesNothing kills the server with SIGKILL right after
// acknowledged transactions and checks they survive a restart.
func TestOvsdbCrashLosesNothing(t *testing.T) {
	p := ovsdbStart(t, ovsdbOpts{})
	p.mustVsctl("init")
	for i := 0; i < 20; i++ {
		p.mustVsctl("add-br", fmt.Sprintf("br%02d", i), "--", "set", "Bridge", fmt.Sprintf("br%02d", i), fmt.Sprintf("external_ids:n=%d", i))
	}
	p.kill9()
	p.start()
	out := p.mustVsctl("list-br")
	if got := strings.Count(out, "\n"); got != 20 {
		t.Fatalf("after kill -9 and restart: %d bridges:\n%s", got, out)
	}
	if v := p.mustVsctl("get", "Bridge", "br19", "external_ids:n"); v != "\"19\"\n" {
		t.Fatalf("external_ids:n = %q", v)
	}
	// Debian's tools read the file govs wrote.
	if r := ovsdbRun(ovsdbTool, "query", p.db, `["Open_vSwitch",{"op":"select","table":"Bridge","where":[],"columns":["name"]}]`); r.code != 0 || strings.Count(r.stdout, `"name"`) != 20 {
		t.Fatalf("ovsdb-tool query: %+v", r)
	}
}

// TestOvsdbAppctl checks the unixctl commands scripts use, on govs' server.
func TestOvsdbAppctl(t *testing.T) {
	p := ovsdbStart(t, ovsdbOpts{})
	if r := p.appctl("version"); r.code != 0 || !strings.HasPrefix(r.stdout, "ovsdb-server (") {
		t.Fatalf("version: %+v", r)
	}
	r := p.appctl("list-commands")
	for _, c := range []string{"exit", "ovsdb-server/compact", "ovsdb-server/add-remote", "ovsdb-server/remove-remote", "ovsdb-server/list-remotes", "ovsdb-server/list-dbs"} {
		if !strings.Contains(r.stdout, "  "+c) {
			t.Errorf("list-commands lacks %s:\n%s", c, r.stdout)
		}
	}
	if r := p.appctl("ovsdb-server/list-dbs"); r.stdout != "Open_vSwitch\n_Server\n" {
		t.Fatalf("list-dbs: %+v", r)
	}
	pid := p.pid()
	if r := p.appctl("exit"); r.code != 0 {
		t.Fatalf("exit: %+v", r)
	}
	ovsdbWait(t, vswTimeout, "ovsdb-server to exit", func() bool { return !vswAlive(pid) })
	if _, err := os.Stat(p.pidf); err == nil {
		t.Fatal("pidfile left behind after exit")
	}
}
