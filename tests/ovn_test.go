package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
)

// Debian's OVN 23.03 (ovn-central, ovn-host) for the OVN end-to-end test.
const (
	ovnNorthd     = "/usr/bin/ovn-northd"
	ovnController = "/usr/bin/ovn-controller"
	ovnNbctl      = "/usr/bin/ovn-nbctl"
	ovnSbctl      = "/usr/bin/ovn-sbctl"
	ovnSBSchema   = "/usr/share/ovn/ovn-sb.ovsschema"
	ovsVswitchd   = "/usr/sbin/ovs-vswitchd"
)

// ovnDaemon starts a daemon that detaches with --pidfile=DIR/NAME.pid, and
// stops it by that pid when the test ends.
func ovnDaemon(t *testing.T, dir, name, bin string, args ...string) {
	t.Helper()
	p := &ovsdbProc{t: t, kind: name, dir: dir, pidf: filepath.Join(dir, name+".pid")}
	t.Cleanup(p.stop)
	env := []string{"OVS_RUNDIR=" + dir, "OVS_LOGDIR=" + dir, "OVS_DBDIR=" + dir, "OVN_RUNDIR=" + dir, "OVN_LOGDIR=" + dir}
	args = append(args, "--pidfile="+p.pidf, "--log-file="+filepath.Join(dir, name+".log"), "--detach", "--no-chdir")
	if out, err := vswRunEnv(env, bin, args...); err != nil {
		b, _ := os.ReadFile(filepath.Join(dir, name+".log"))
		t.Fatalf("%s: %v\n%s\nlog:\n%s", name, err, out, b)
	}
}

func ovnRun(t *testing.T, bin string, args ...string) string {
	t.Helper()
	out, err := vswRun(bin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var ovnUUIDRe = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// TestOvnEndToEnd runs Debian's OVN on govs' ovsdb-server: it serves the
// Northbound and Southbound databases to Debian's ovn-northd and to
// Debian's ovn-controller (conditional monitoring, its default), which runs
// a chassis on Debian's ovs-vswitchd (netdev datapath, its own Debian
// ovsdb-server). Two namespace VIFs on one logical switch are bound
// (Port_Binding chassis and up) and ping each other, ovn-nbctl --wait=hv
// returns once the chassis caught up, and the Southbound Logical_Flow table
// is the one ovn-northd makes on Debian's ovsdb-server for the same
// Northbound script. Then, sharing that set-up, the chassis moves to the
// Southbound served over pssl: (certificates from ovs-pki) and then
// through a govs relay (relay:OVN_Southbound:...): in each, both VIFs are
// unbound and bound again through the new connection and ping.
func TestOvnEndToEnd(t *testing.T) {
	ovsdbNeed(t, ovnNorthd, ovnController, ovnNbctl, ovnSbctl, ovsVswitchd, ovsdbNBSchema, ovnSBSchema, ovsdbDebianServer)
	k := sslCerts(t)
	sslPort := ovsdbFreePort(t)
	dir := ovsdbKeptDir(t, "ovnt-", "OVN test")
	sub := func(name string) string {
		d := filepath.Join(dir, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	// Central: the NB and SB databases on govs' server, and on Debian's
	// for the reference, each with its ovn-northd.
	type central struct{ nb, sb string }
	var centrals [2]central
	for i, kind := range []string{"govs", "debian"} {
		d := sub(kind)
		for _, db := range []struct{ file, schema string }{{"nb.db", ovsdbNBSchema}, {"sb.db", ovnSBSchema}} {
			ovnRun(t, ovsdbTool, "create", filepath.Join(d, db.file), db.schema)
		}
		bin := ovsdbDebianServer
		if kind == "govs" {
			bin = ovsdbGovsServer(t)
		}
		c := central{nb: "unix:" + filepath.Join(d, "nb.sock"), sb: "unix:" + filepath.Join(d, "sb.sock")}
		args := []string{filepath.Join(d, "nb.db"), filepath.Join(d, "sb.db"),
			"--remote=p" + c.nb, "--remote=p" + c.sb, "--unixctl=" + filepath.Join(d, "ovsdb-server.ctl")}
		if kind == "govs" {
			args = append(args, fmt.Sprintf("--remote=pssl:%d:127.0.0.1", sslPort),
				"--private-key="+k.srvKey, "--certificate="+k.srvCert, "--ca-cert="+k.ca)
		}
		ovnDaemon(t, d, "ovsdb-server", bin, args...)
		ovnDaemon(t, d, "ovn-northd", ovnNorthd, "--ovnnb-db="+c.nb, "--ovnsb-db="+c.sb,
			"--unixctl="+filepath.Join(d, "ovn-northd.ctl"))
		centrals[i] = c
	}
	govs := centrals[0]

	// The chassis: Debian's ovsdb-server, ovs-vswitchd and ovn-controller.
	hv := sub("hv1")
	// Its SSL files serve the pssl: variant below.
	vsctl := ovnDebianChassis(t, hv, govs.sb, "--private-key="+k.cliKey, "--certificate="+k.cliCert, "--ca-cert="+k.ca)

	var vifs []*vswNS
	for i, tag := range []string{"a", "b"} {
		ns := vswAddPrefixedNS(t, "ovnt", tag, "10.0.0."+string(rune('1'+i))+"/24")
		ns.mustExec("ip", "link", "set", "eth0", "address", "50:54:00:00:00:0"+string(rune('1'+i)))
		// The userspace datapath does not fill in checksums a veth
		// leaves to offload.
		ns.exec("ethtool", "-K", "eth0", "tx", "off")
		vsctl("add-port", "br-int", ns.Host, "--", "set", "interface", ns.Host,
			"external_ids:iface-id=sw0-p"+string(rune('1'+i)))
		vifs = append(vifs, ns)
	}
	script := []string{"ls-add", "sw0",
		"--", "lsp-add", "sw0", "sw0-p1", "--", "lsp-set-addresses", "sw0-p1", "50:54:00:00:00:01 10.0.0.1",
		"--", "lsp-add", "sw0", "sw0-p2", "--", "lsp-set-addresses", "sw0-p2", "50:54:00:00:00:02 10.0.0.2",
		"--", "acl-add", "sw0", "to-lport", "1000", "ip4 && icmp", "allow-related",
		"--", "lr-add", "lr0", "--", "lrp-add", "lr0", "lr0-sw0", "00:00:00:00:ff:01", "10.0.0.254/24",
		"--", "lsp-add", "sw0", "sw0-lr0", "--", "lsp-set-type", "sw0-lr0", "router",
		"--", "lsp-set-addresses", "sw0-lr0", "router", "--", "lsp-set-options", "sw0-lr0", "router-port=lr0-sw0"}
	for _, c := range centrals {
		ovnRun(t, ovnNbctl, append([]string{"--db=" + c.nb, "--timeout=60"}, script...)...)
	}

	bound := func(what string, want bool) {
		t.Helper()
		for _, port := range []string{"sw0-p1", "sw0-p2"} {
			ovsdbWait(t, vswTimeout, port+" "+what, func() bool {
				out, _ := vswRun(ovnSbctl, "--db="+govs.sb, "--bare", "--columns=chassis,up", "find", "Port_Binding", "logical_port="+port)
				f := strings.Fields(out)
				if !want {
					return len(f) == 1 && f[0] == "false"
				}
				return len(f) == 2 && ovnUUIDRe.MatchString(f[0]) && f[1] == "true"
			})
		}
	}
	bound("bound and up", true)
	// --wait=hv returns once the chassis has processed the change.
	ovnRun(t, ovnNbctl, "--db="+govs.nb, "--timeout=60", "--wait=hv", "set", "logical_switch", "sw0", "external_ids:step=1")
	nbCfg := strings.TrimSpace(ovnRun(t, ovnNbctl, "--db="+govs.nb, "get", "NB_Global", ".", "nb_cfg"))
	hvCfg := strings.TrimSpace(ovnRun(t, ovnNbctl, "--db="+govs.nb, "get", "NB_Global", ".", "hv_cfg"))
	chCfg := strings.TrimSpace(ovnRun(t, ovnSbctl, "--db="+govs.sb, "--bare", "--columns=nb_cfg", "list", "Chassis_Private"))
	if nbCfg == "0" || hvCfg != nbCfg || chCfg != nbCfg {
		t.Errorf("after --wait=hv: NB nb_cfg %s, hv_cfg %s, chassis nb_cfg %s", nbCfg, hvCfg, chCfg)
	}

	ovsdbWait(t, vswTimeout, "a first ping from sw0-p1 to sw0-p2", func() bool {
		_, err := vifs[0].exec("ping", "-c", "1", "-W", "1", "10.0.0.2")
		return err == nil
	})
	if out, err := vifs[0].exec("ping", "-c", "3", "-i", "0.2", "-W", "5", "10.0.0.2"); err != nil {
		t.Errorf("ping: %v\n%s", err, out)
	}
	if out, err := vifs[1].exec("ping", "-c", "3", "-i", "0.2", "-W", "5", "10.0.0.254"); err != nil {
		t.Errorf("ping of the router port: %v\n%s", err, out)
	}

	// The variants: the chassis's Southbound connection moves; both VIFs
	// are unbound and bound again through it, and ping.
	relayDir := sub("relay")
	relaySB := "unix:" + filepath.Join(relayDir, "sb.sock")
	ovnDaemon(t, relayDir, "ovsdb-server", ovsdbGovsServer(t), "relay:OVN_Southbound:"+govs.sb,
		"--remote=p"+relaySB, "--unixctl="+filepath.Join(relayDir, "ovsdb-server.ctl"))
	for _, v := range []struct{ name, remote string }{
		{"ssl", fmt.Sprintf("ssl:127.0.0.1:%d", sslPort)},
		{"relay", relaySB},
	} {
		vsctl("set", "open", ".", "external_ids:ovn-remote="+v.remote)
		// Its reconnect module logs the new connection: then the old
		// one is gone.
		ovsdbWait(t, vswTimeout, v.name+": ovn-controller connected to "+v.remote, func() bool {
			b, _ := os.ReadFile(filepath.Join(hv, "ovn-controller.log"))
			return strings.Contains(string(b), "|reconnect|INFO|"+v.remote+": connected")
		})
		ovsdbWait(t, vswTimeout, v.name+": ovn-controller connected", func() bool {
			// ovn-controller has no --unixctl: its socket is named by pid.
			p := &ovsdbProc{pidf: filepath.Join(hv, "ovn-controller.pid")}
			ctl := filepath.Join(hv, fmt.Sprintf("ovn-controller.%d.ctl", p.pid()))
			out, _ := vswRun("ovs-appctl", "-t", ctl, "connection-status")
			return strings.TrimSpace(out) == "connected"
		})
		for i := range vifs {
			vsctl("remove", "interface", vifs[i].Host, "external_ids", "iface-id")
		}
		bound(v.name+": unbound", false)
		for i := range vifs {
			vsctl("set", "interface", vifs[i].Host, "external_ids:iface-id=sw0-p"+string(rune('1'+i)))
		}
		bound(v.name+": bound again and up", true)
		ovnRun(t, ovnNbctl, "--db="+govs.nb, "--timeout=60", "--wait=hv", "set", "logical_switch", "sw0", "external_ids:step="+v.name)
		ovsdbWait(t, vswTimeout, v.name+": a ping from sw0-p1 to sw0-p2", func() bool {
			_, err := vifs[0].exec("ping", "-c", "1", "-W", "1", "10.0.0.2")
			return err == nil
		})
	}

	// Both northds are done with the same Northbound contents.
	var lflows [2]string
	for i, c := range centrals {
		ovnRun(t, ovnNbctl, "--db="+c.nb, "--timeout=60", "--wait=sb", "sync")
		lflows[i] = ovnSortDatapaths(ovnUUIDRe.ReplaceAllString(ovnRun(t, ovnSbctl, "--db="+c.sb, "lflow-list"), "<uuid>"))
	}
	if lflows[0] != lflows[1] {
		t.Errorf("Logical_Flow differs from Debian's server's (govs %d lines, Debian %d)", strings.Count(lflows[0], "\n"), strings.Count(lflows[1], "\n"))
	}
	if n := strings.Count(lflows[0], "table="); n < 100 {
		t.Errorf("only %d logical flows", n)
	}
	// ovn-controller turned them into OpenFlow flows on br-int.
	flows, _ := vswRun("ovs-ofctl", "dump-flows", "unix:"+filepath.Join(hv, "br-int.mgmt"))
	if n := strings.Count(flows, "\n"); n < 100 {
		t.Errorf("%d OpenFlow flows on br-int", n)
	}
	// The daemons are stopped by pid (Cleanup); check none died meanwhile.
	for _, d := range []string{hv, filepath.Join(dir, "govs"), relayDir} {
		pids, _ := filepath.Glob(filepath.Join(d, "*.pid"))
		for _, pf := range pids {
			p := &ovsdbProc{pidf: pf}
			if pid := p.pid(); pid <= 0 || syscall.Kill(pid, 0) != nil {
				t.Errorf("%s is not running", filepath.Base(pf))
			}
		}
	}
}

// ovnSortDatapaths sorts lflow-list's per-datapath blocks: ovn-sbctl orders
// datapaths by uuid, which differs between two databases.
func ovnSortDatapaths(s string) string {
	blocks := strings.Split(s, "Datapath: ")
	sort.Strings(blocks[1:])
	return strings.Join(blocks, "Datapath: ")
}
