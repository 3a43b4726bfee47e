package tests

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestOvnLBNat runs Debian's OVN 23.03 on one chassis, govs' switch and
// then Debian's ovs-vswitchd (netdev datapath), with the same checks: a
// load balancer VIP on a logical switch spreads a client's HTTP requests
// over two backend VIFs (both answer), and a gateway router to a second,
// "external" switch SNATs the internal subnet to its external address and
// maps a dnat_and_snat address to one internal VIF, both ways. Each VIF
// runs a small HTTP server that answers its own name and the peer address
// it sees.
func TestOvnLBNat(t *testing.T) {
	ovsdbNeed(t, ovnNorthd, ovnController, ovnNbctl, ovnSbctl, ovsVswitchd, ovsdbNBSchema, ovnSBSchema, ovsdbDebianServer,
		ovnPython, "/usr/bin/curl", "/usr/bin/ab")
	vswNeedRoot(t)
	t.Run("govs", func(t *testing.T) {
		central, nb, sb := ovnCentral(t, "ovnl-")
		e := ovnGovsChassis(t, central, sb)
		ovnLBNatChecks(t, "ovnlg", nb, sb, func(args ...string) { e.mustVsctl(args...) }, false)
		// The load balancer's group buckets once crashed govs' switch.
		if pid := vswReadPid(filepath.Join(e.dir, "ovs-vswitchd.pid")); pid <= 0 || syscall.Kill(pid, 0) != nil {
			t.Error("govs' ovs-vswitchd is not running")
		}
	})
	t.Run("debian", func(t *testing.T) {
		_, nb, sb := ovnCentral(t, "ovnl-")
		hv := ovsdbKeptDir(t, "ovnlhv-", "OVN chassis")
		vsctl := ovnDebianChassis(t, hv, sb)
		ovnLBNatChecks(t, "ovnld", nb, sb, func(args ...string) { vsctl(args...) }, true)
	})
}

const ovnPython = "/usr/bin/python3"

// ovnHTTPServer answers GET with argv[1] and the client's address, and
// GET /count with the number of other GETs it answered. A thread per
// connection and a listen backlog of 128: ab's 8 concurrent connections
// on a loaded machine overflowed http.server's default backlog of 5 with
// one request at a time, and a connection whose handshake the full queue
// dropped could wait out ab's 10 s, whatever the switch.
const ovnHTTPServer = `import http.server, sys, threading
n = 0
lock = threading.Lock()
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        global n
        if self.path == "/count":
            with lock:
                b = ("%d\n" % n).encode()
        else:
            with lock:
                n += 1
            b = (sys.argv[1] + " " + self.client_address[0] + "\n").encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    def log_message(self, *a):
        pass
class S(http.server.ThreadingHTTPServer):
    request_queue_size = 128
S(("", 80), H).serve_forever()
`

// ovnServeHTTP runs ovnHTTPServer in ns on port 80, answering name, until
// the test ends.
func ovnServeHTTP(t *testing.T, ns *vswNS, name string) {
	t.Helper()
	// Registered first, this runs after the server has stopped.
	var out *bytes.Buffer
	t.Cleanup(func() {
		if t.Failed() && out != nil && out.Len() > 0 {
			t.Logf("HTTP server %s: %s", name, out.String())
		}
	})
	out = ns.serve(t, "80", ovnPython, "-c", ovnHTTPServer, name)
}

// ovnFetch GETs url from ns until an answer comes (or the deadline) and
// returns it: "<server name> <peer address the server saw>".
func ovnFetch(t *testing.T, ns *vswNS, url string) string {
	t.Helper()
	var got string
	vswWait(t, vswTimeout, ns.Name+" to fetch "+url, func() bool {
		out, err := ns.exec("curl", "-s", "-m", "2", url)
		got = strings.TrimSpace(out)
		return err == nil && got != ""
	})
	return got
}

// ovnCounts returns how many requests the backends 10.0.0.2 and 10.0.0.3
// have answered, asked directly from ns.
func ovnCounts(t *testing.T, ns *vswNS) [2]int {
	t.Helper()
	var n [2]int
	for i, addr := range []string{"10.0.0.2", "10.0.0.3"} {
		got := ovnFetch(t, ns, "http://"+addr+"/count")
		v, err := strconv.Atoi(got)
		if err != nil {
			t.Fatalf("%s/count: %q", addr, got)
		}
		n[i] = v
	}
	return n
}

// ovnLBNatChecks builds the logical topology on a chassis (hv1) whose
// br-int takes ports through vsctl, and checks the load balancer and the
// NAT. prefix names the namespaces; reference is Debian's switch: its
// VIFs' transmit checksum offload is turned off (its userspace datapath
// does not fill them in), and ab may miss a few answers through it.
func ovnLBNatChecks(t *testing.T, prefix, nb, sb string, vsctl func(...string), reference bool) {
	nbctl := func(args ...string) string {
		t.Helper()
		return ovnRun(t, ovnNbctl, append([]string{"--db=" + nb, "--timeout=30"}, args...)...)
	}
	vif := func(tag, iface, mac, addr, gw string) *vswNS {
		ns := vswAddPrefixedNS(t, prefix, tag, addr)
		ns.mustExec("ip", "link", "set", "eth0", "address", mac)
		ns.mustExec("ip", "route", "add", "default", "via", gw)
		if reference {
			ns.exec("ethtool", "-K", "eth0", "tx", "off")
		}
		vsctl("add-port", "br-int", ns.Host, "--", "set", "interface", ns.Host, "external_ids:iface-id="+iface)
		return ns
	}
	// sw0 (10.0.0.0/24): a client and two backends; sw1 (172.16.0.0/24):
	// the "external" side; lr0, a gateway router on hv1, joins them.
	a := vif("a", "sw0-p1", "50:54:00:00:00:01", "10.0.0.1/24", "10.0.0.254")
	b1 := vif("b1", "sw0-p2", "50:54:00:00:00:02", "10.0.0.2/24", "10.0.0.254")
	b2 := vif("b2", "sw0-p3", "50:54:00:00:00:03", "10.0.0.3/24", "10.0.0.254")
	x := vif("x", "sw1-p1", "50:54:00:00:01:01", "172.16.0.1/24", "172.16.0.254")
	nbctl("ls-add", "sw0",
		"--", "lsp-add", "sw0", "sw0-p1", "--", "lsp-set-addresses", "sw0-p1", "50:54:00:00:00:01 10.0.0.1",
		"--", "lsp-add", "sw0", "sw0-p2", "--", "lsp-set-addresses", "sw0-p2", "50:54:00:00:00:02 10.0.0.2",
		"--", "lsp-add", "sw0", "sw0-p3", "--", "lsp-set-addresses", "sw0-p3", "50:54:00:00:00:03 10.0.0.3",
		"--", "ls-add", "sw1",
		"--", "lsp-add", "sw1", "sw1-p1", "--", "lsp-set-addresses", "sw1-p1", "50:54:00:00:01:01 172.16.0.1",
		"--", "lr-add", "lr0", "--", "set", "logical_router", "lr0", "options:chassis=hv1",
		"--", "lrp-add", "lr0", "lr0-sw0", "00:00:00:00:ff:01", "10.0.0.254/24",
		"--", "lrp-add", "lr0", "lr0-sw1", "00:00:00:00:ff:02", "172.16.0.254/24",
		"--", "lsp-add", "sw0", "sw0-lr0", "--", "lsp-set-type", "sw0-lr0", "router",
		"--", "lsp-set-addresses", "sw0-lr0", "router", "--", "lsp-set-options", "sw0-lr0", "router-port=lr0-sw0",
		"--", "lsp-add", "sw1", "sw1-lr0", "--", "lsp-set-type", "sw1-lr0", "router",
		"--", "lsp-set-addresses", "sw1-lr0", "router", "--", "lsp-set-options", "sw1-lr0", "router-port=lr0-sw1",
		// The VIP is in no subnet: the client reaches it through its
		// default route, and sw0's load balancer DNATs it on the way.
		"--", "lb-add", "lb0", "192.168.100.100:80", "10.0.0.2:80,10.0.0.3:80", "tcp",
		"--", "ls-lb-add", "sw0", "lb0")
	for _, port := range []string{"sw0-p1", "sw0-p2", "sw0-p3", "sw1-p1"} {
		vswWait(t, vswTimeout, port+" bound and up", func() bool {
			out, _ := vswRun(ovnSbctl, "--db="+sb, "--bare", "--columns=chassis,up", "find", "Port_Binding", "logical_port="+port)
			f := strings.Fields(out)
			return len(f) == 2 && ovnUUIDRe.MatchString(f[0]) && f[1] == "true"
		})
	}
	nbctl("--wait=hv", "sync")
	for _, s := range []struct {
		ns   *vswNS
		name string
	}{{b1, "b1"}, {b2, "b2"}, {x, "x"}} {
		ovnServeHTTP(t, s.ns, s.name)
	}
	a.waitPing("10.0.0.2")
	a.waitPing("172.16.0.1")

	// 1. The load balancer: both backends answer the VIP, and see the
	// client's own address.
	seen := map[string]bool{}
	vswWait(t, vswTimeout, "both backends to answer the VIP", func() bool {
		got := ovnFetch(t, a, "http://192.168.100.100/")
		f := strings.Fields(got)
		if len(f) != 2 || f[1] != "10.0.0.1" || (f[0] != "b1" && f[0] != "b2") {
			t.Fatalf("the VIP answered %q, want b1 or b2 and peer 10.0.0.1", got)
		}
		seen[f[0]] = true
		return len(seen) == 2
	})
	// ab's 200 requests through the VIP all succeed, and both backends
	// served some of them. Debian's switch, the reference, once left one
	// request unanswered for ab's 10 s on the loaded machine: it may miss
	// a few.
	before := ovnCounts(t, a)
	out, err := a.exec("ab", "-q", "-n", "200", "-c", "8", "-s", "10", "http://192.168.100.100/")
	done := 200
	if err != nil || !strings.Contains(out, "Complete requests:      200") || !strings.Contains(out, "Failed requests:        0") {
		m := regexp.MustCompile(`Total of (\d+) requests completed`).FindStringSubmatch(out)
		if m != nil {
			done, _ = strconv.Atoi(m[1])
		}
		if !reference || m == nil || done < 190 {
			t.Fatalf("ab through the VIP: %v\n%s", err, out)
		}
		t.Logf("Debian's switch: ab completed %d of 200 requests through the VIP", done)
	}
	after := ovnCounts(t, a)
	if d1, d2 := after[0]-before[0], after[1]-before[1]; d1 == 0 || d2 == 0 || d1+d2 < done || d1+d2 > 200 {
		t.Fatalf("ab's %d requests: b1 served %d, b2 %d", done, d1, d2)
	} else {
		t.Logf("ab's %d requests through the VIP: b1 served %d, b2 %d", done, d1, d2)
	}

	// 2. NAT (added now: a gateway router SNATs whatever it routes from
	// the subnet, the client's VIP requests included): x reaches b1 through the dnat_and_snat address (b1 sees
	// x's own address); a's connections to x come from the router's
	// SNAT address, b1's from its dnat_and_snat address.
	nbctl("--wait=hv", "lr-nat-add", "lr0", "snat", "172.16.0.254", "10.0.0.0/24",
		"--", "lr-nat-add", "lr0", "dnat_and_snat", "172.16.0.10", "10.0.0.2")
	for _, c := range []struct {
		from      *vswNS
		url, want string
	}{
		{x, "http://172.16.0.10/", "b1 172.16.0.1"},
		{a, "http://172.16.0.1/", "x 172.16.0.254"},
		{b1, "http://172.16.0.1/", "x 172.16.0.10"},
	} {
		if got := ovnFetch(t, c.from, c.url); got != c.want {
			t.Errorf("%s fetching %s: got %q, want %q", c.from.Name, c.url, got, c.want)
		}
	}
}

// ovnDebianChassis starts chassis hv1 in dir on Debian's daemons:
// ovsdb-server, ovs-vswitchd with br-int on the netdev datapath, and
// ovn-controller connected to sb with extra arguments. It returns
// ovs-vsctl on that database (failing the test on error).
func ovnDebianChassis(t *testing.T, dir, sb string, controllerArgs ...string) func(...string) string {
	t.Helper()
	chassisDB := "unix:" + filepath.Join(dir, "db.sock")
	ovnRun(t, ovsdbTool, "create", filepath.Join(dir, "conf.db"), ovsdbVSwitchSch)
	ovnDaemon(t, dir, "ovsdb-server", ovsdbDebianServer, filepath.Join(dir, "conf.db"), "--remote=p"+chassisDB,
		"--unixctl="+filepath.Join(dir, "ovsdb-server.ctl"))
	vsctl := func(args ...string) string {
		t.Helper()
		return ovnRun(t, ovsdbVsctl, append([]string{"--db=" + chassisDB, "--timeout=60"}, args...)...)
	}
	vsctl("--no-wait", "init")
	ovnDaemon(t, dir, "ovs-vswitchd", ovsVswitchd, chassisDB, "--unixctl="+filepath.Join(dir, "ovs-vswitchd.ctl"))
	vsctl("add-br", "br-int", "--", "set", "bridge", "br-int", "datapath_type=netdev", "fail-mode=secure",
		"other-config:disable-in-band=true")
	t.Cleanup(func() {
		// The taps of Debian's netdev bridges persist after its
		// ovs-vswitchd stops: delete the bridge while it runs (this
		// cleanup runs before the daemons' stops).
		vswRun(ovsdbVsctl, "--db="+chassisDB, "--timeout=10", "del-br", "br-int")
	})
	vsctl("set", "open", ".", "external_ids:system-id=hv1", "external_ids:ovn-remote="+sb,
		"external_ids:ovn-encap-type=geneve", "external_ids:ovn-encap-ip=127.0.0.1",
		"external_ids:ovn-bridge-datapath-type=netdev")
	t.Cleanup(func() {
		if t.Failed() {
			for _, f := range []string{"ovn-controller.log", "ovs-vswitchd.log"} {
				if b, err := os.ReadFile(filepath.Join(dir, f)); err == nil {
					t.Logf("%s:\n%s", f, vswTail(string(b), 40))
				}
			}
		}
	})
	ovnDaemon(t, dir, "ovn-controller", ovnController, append([]string{chassisDB}, controllerArgs...)...)
	return vsctl
}
