package tests

// End-to-end tests of the vhost-user interface types (dpdkvhostuser,
// dpdkvhostuserclient): a namespace pings DPDK testpmd, in icmpecho mode
// (it answers ARP requests and ICMP echo requests for any address), through
// a veth and a vhost-user port on a govs bridge. Everything these tests
// create is named gvvh*. netdev/vhostuser/testdata/setup.sh installs
// testpmd and reserves the hugepages.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/govs/govs/netdev/vhostuser/testpmd"
)

// gvvhNeedTestpmd fails the test unless testpmd and free hugepages are
// there.
func gvvhNeedTestpmd(t *testing.T) { testpmd.Need(t, 128) }

// gvvhStartTestpmd runs testpmd in icmpecho mode with one virtio-user
// port on sock, serving the socket if server.
func gvvhStartTestpmd(t *testing.T, sock string, server bool) *testpmd.Process {
	t.Helper()
	return testpmd.Start(t, testpmd.Options{Socket: sock, Server: server, Mode: "icmpecho", MAC: "02:00:00:77:00:02"})
}

// gvvhAddNS is vswAddNS with gvvh names: namespace gvvh-<tag> whose eth0
// holds addr, host side gvvh<tag>.
func gvvhAddNS(t *testing.T, tag, addr string) *vswNS {
	t.Helper()
	return vswAddPrefixedNS(t, "gvvh", tag, addr)
}

// gvvhWaitSocket waits for a unix socket file.
func gvvhWaitSocket(t *testing.T, path string) {
	t.Helper()
	vswWait(t, vswTimeout, "socket "+path, func() bool {
		fi, err := os.Stat(path)
		return err == nil && fi.Mode()&os.ModeSocket != 0
	})
}

// gvvhDPRx returns the RX packets dpctl/show -s gives for port name.
func gvvhDPRx(t *testing.T, e *vswEnv, name string) uint64 {
	t.Helper()
	m := regexp.MustCompile(`port \d+: ` + regexp.QuoteMeta(name) + ` .*\n\s+RX packets:(\d+)`).FindStringSubmatch(e.mustAppctl("dpctl/show", "-s"))
	if m == nil {
		t.Fatalf("no RX packets for %s in dpctl/show -s", name)
	}
	n, _ := strconv.ParseUint(m[1], 10, 64)
	return n
}

// gvvhColumn returns "ovs-vsctl get interface name col", or "" on error.
func (e *vswEnv) gvvhColumn(name, col string) string {
	out, err := e.vsctl("--no-wait", "get", "interface", name, col)
	if err != nil {
		return ""
	}
	return strings.Trim(strings.TrimSpace(out), `"`)
}

// gvvhWaitColumn waits until the column's value matches re.
func (e *vswEnv) gvvhWaitColumn(t *testing.T, name, col, re string) {
	t.Helper()
	rx := regexp.MustCompile(re)
	vswWait(t, vswTimeout, fmt.Sprintf("%s %s to match %s (is %q)", name, col, re, e.gvvhColumn(name, col)), func() bool {
		return rx.MatchString(e.gvvhColumn(name, col))
	})
}

// TestVswitchdVhostUser: govs serves the socket (dpdkvhostuser) under
// vhost-sock-dir, testpmd connects; ping, zero copy turned on live,
// tx-retries-max, the status and statistics columns, and the port deleted
// under traffic while the rest of the bridge keeps working.
func TestVswitchdVhostUser(t *testing.T) {
	vswNeedRoot(t)
	gvvhNeedTestpmd(t)
	e := vswNewEnv(t)
	ns1 := gvvhAddNS(t, "s1", "10.77.0.1/24")
	ns2 := gvvhAddNS(t, "s2", "10.77.0.3/24")
	if err := os.Mkdir(filepath.Join(e.dir, "vhs"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.mustVsctl("set", "open_vswitch", ".", "other_config:vhost-sock-dir=vhs")
	e.mustVsctl("add-br", "gvvhbr0", "--", "set", "bridge", "gvvhbr0", "datapath_type=netdev",
		"--", "add-port", "gvvhbr0", ns1.Host, "--", "add-port", "gvvhbr0", ns2.Host,
		"--", "add-port", "gvvhbr0", "gvvhu0", "--", "set", "interface", "gvvhu0", "type=dpdkvhostuser")

	types := e.mustVsctl("get", "open_vswitch", ".", "iface_types")
	if !strings.Contains(types, "dpdkvhostuser") || !strings.Contains(types, "dpdkvhostuserclient") {
		t.Errorf("iface_types %s lacks the vhost-user types", types)
	}
	sock := filepath.Join(e.dir, "vhs", "gvvhu0")
	gvvhWaitSocket(t, sock)
	if of := e.ofport("gvvhu0"); of <= 0 {
		t.Fatalf("gvvhu0 ofport %d", of)
	}
	e.gvvhWaitColumn(t, "gvvhu0", "link_state", "^down$")
	gvvhStartTestpmd(t, sock, false)

	e.gvvhWaitColumn(t, "gvvhu0", "link_state", "^up$")
	ns1.waitPing("10.77.0.2")
	if got := e.gvvhColumn("gvvhu0", "admin_state"); got != "up" {
		t.Errorf("admin_state %q", got)
	}
	e.gvvhWaitColumn(t, "gvvhu0", "status:status", "^connected$")
	for _, k := range []string{"mode", "socket", "features", "num_of_vrings", "numa", "n_rxq", "n_txq", "dq-zero-copy", "tx-retries-max"} {
		if e.gvvhColumn("gvvhu0", "status:"+k) == "" {
			t.Errorf("status has no %s: %s", k, e.gvvhColumn("gvvhu0", "status"))
		}
	}
	if got := e.gvvhColumn("gvvhu0", "status:socket"); got != sock {
		t.Errorf("status:socket %q, want %q", got, sock)
	}
	e.gvvhWaitColumn(t, "gvvhu0", "statistics:rx_packets", "^[1-9][0-9]*$")
	t.Logf("status %s\nstatistics %s", e.gvvhColumn("gvvhu0", "status"), e.gvvhColumn("gvvhu0", "statistics"))
	for _, k := range []string{"ovs_tx_retries", "ovs_tx_failure_drops", "tx_packets", "tx_dropped"} {
		if e.gvvhColumn("gvvhu0", "statistics:"+k) == "" {
			t.Errorf("statistics has no %s: %s", k, e.gvvhColumn("gvvhu0", "statistics"))
		}
	}

	// Live options: the port is not reopened (its connection stays).
	ofport := e.ofport("gvvhu0")
	e.mustVsctl("set", "interface", "gvvhu0", "options:dq-zero-copy=true", "options:tx-retries-max=4")
	e.gvvhWaitColumn(t, "gvvhu0", "status:dq-zero-copy", "^true$")
	e.gvvhWaitColumn(t, "gvvhu0", "status:dq-zero-copy-active", "^true$")
	e.gvvhWaitColumn(t, "gvvhu0", "status:tx-retries-max", "^4$")
	if err := ns1.ping("10.77.0.2", 10); err != nil {
		t.Fatalf("ping with dq-zero-copy=true: %v", err)
	}
	// Echo replies longer than the head govs copies are forwarded from
	// testpmd's memory, whole (ping checks the echoed payload).
	if out, err := ns1.exec("ping", "-q", "-n", "-c", "20", "-i", "0.05", "-w", vswPingDeadline, "-s", "1400", "-p", "a5", "10.77.0.2"); err != nil {
		t.Fatalf("1400-byte pings with dq-zero-copy=true: %v\n%s", err, out)
	}
	e.gvvhWaitColumn(t, "gvvhu0", "statistics:dq_zero_copy_packets", "^([2-9][0-9]|[1-9][0-9]{2,})$")
	e.mustVsctl("set", "interface", "gvvhu0", "options:dq-zero-copy=false")
	e.gvvhWaitColumn(t, "gvvhu0", "status:dq-zero-copy-active", "^false$")
	if out, err := ns1.exec("ping", "-q", "-n", "-c", "5", "-i", "0.05", "-w", vswPingDeadline, "-s", "1400", "10.77.0.2"); err != nil {
		t.Fatalf("ping with dq-zero-copy turned off again: %v\n%s", err, out)
	}
	e.mustVsctl("set", "interface", "gvvhu0", "options:dq-zero-copy=true")
	e.gvvhWaitColumn(t, "gvvhu0", "status:dq-zero-copy-active", "^true$")
	e.mustVsctl("set", "interface", "gvvhu0", "options:tx-retries-max=40")
	e.gvvhWaitColumn(t, "gvvhu0", "status:tx-retries-max", "^8$")
	if got := e.ofport("gvvhu0"); got != ofport {
		t.Errorf("ofport %d after live options, was %d", got, ofport)
	}
	log, _ := os.ReadFile(e.logPath())
	for _, want := range []string{
		"Socket " + sock + " created for vhost-user port gvvhu0",
		"Max Tx retries for vhost device 'gvvhu0' set to 4",
		"Max Tx retries for vhost device 'gvvhu0' set to 8",
	} {
		if !strings.Contains(string(log), want) {
			t.Errorf("log lacks %q", want)
		}
	}
	if strings.Count(string(log), "created for vhost-user port gvvhu0") != 1 {
		t.Errorf("gvvhu0 was reopened by a live option")
	}
	// mtu_request does not touch a kernel link of that name; the port
	// shows it as OVS-DPDK does (1500 before it).
	if got := e.gvvhColumn("gvvhu0", "mtu"); got != "1500" {
		t.Errorf("mtu %q of a running vhost-user port, OVS-DPDK shows 1500", got)
	}
	e.mustVsctl("set", "interface", "gvvhu0", "mtu_request=2000")
	if err := ns1.ping("10.77.0.2", 3); err != nil {
		t.Fatalf("ping after mtu_request: %v", err)
	}
	e.gvvhWaitColumn(t, "gvvhu0", "mtu", "^2000$")
	if show := e.mustAppctl("dpctl/show"); !regexp.MustCompile(`port \d+: gvvhu0 \(dpdkvhostuser: configured_rx_queues=1, configured_tx_queues=1, mtu=2000, requested_rx_queues=1, requested_tx_queues=1\)\n`).MatchString(show) {
		t.Errorf("dpctl/show:\n%s", show)
	}

	// Delete the port under traffic: once replies flow through it, as
	// its datapath counters show.
	before := gvvhDPRx(t, e, "gvvhu0")
	flood := exec.Command("ip", "netns", "exec", ns1.Name, "ping", "-q", "-n", "-f", "-w", "120", "10.77.0.2")
	if err := flood.Start(); err != nil {
		t.Fatal(err)
	}
	vswWait(t, vswTimeout, "flood ping replies through gvvhu0", func() bool { return gvvhDPRx(t, e, "gvvhu0") >= before+100 })
	e.mustVsctl("del-port", "gvvhbr0", "gvvhu0")
	flood.Process.Signal(syscall.SIGINT) // by the pid this test started
	flood.Wait()
	if _, err := os.Stat(sock); err == nil {
		t.Errorf("%s still there after del-port", sock)
	}
	ns1.waitPing("10.77.0.3")
	ns1.noPing("10.77.0.2")
	e.mustAppctl("fdb/show", "gvvhbr0")
}

// TestVswitchdVhostUserClient: testpmd serves the socket, govs connects
// (dpdkvhostuserclient); without vhost-server-path the port is there but
// unconfigured; testpmd restarted, govs reconnects and ping resumes.
func TestVswitchdVhostUserClient(t *testing.T) {
	vswNeedRoot(t)
	gvvhNeedTestpmd(t)
	e := vswNewEnv(t)
	ns1 := gvvhAddNS(t, "c1", "10.78.0.1/24")
	dir := t.TempDir()
	sock := filepath.Join(dir, "gvvhc0.sock")
	e.mustVsctl("add-br", "gvvhbr1", "--", "set", "bridge", "gvvhbr1", "datapath_type=netdev",
		"--", "add-port", "gvvhbr1", ns1.Host,
		"--", "add-port", "gvvhbr1", "gvvhc0", "--", "set", "interface", "gvvhc0", "type=dpdkvhostuserclient")

	// As OVS: created, given a number, no error, down.
	if of := e.ofport("gvvhc0"); of <= 0 {
		t.Errorf("gvvhc0 without a path: ofport %d", of)
	}
	if got := e.gvvhColumn("gvvhc0", "error"); got != "" && got != "[]" {
		t.Errorf("gvvhc0 without a path: error %s", got)
	}
	e.gvvhWaitColumn(t, "gvvhc0", "link_state", "^down$")

	tp := gvvhStartTestpmd(t, sock, true)
	gvvhWaitSocket(t, sock)
	ofport := e.ofport("gvvhc0")
	e.mustVsctl("set", "interface", "gvvhc0", "options:vhost-server-path="+sock)
	e.gvvhWaitColumn(t, "gvvhc0", "link_state", "^up$")
	ns1.waitPing("10.78.0.2")
	if got := e.gvvhColumn("gvvhc0", "status:mode"); got != "client" {
		t.Errorf("status:mode %q", got)
	}
	if got := e.ofport("gvvhc0"); got != ofport {
		t.Errorf("ofport %d once the path is set, was %d", got, ofport)
	}

	// testpmd restarted: govs reconnects by itself.
	tp.Stop()
	e.gvvhWaitColumn(t, "gvvhc0", "link_state", "^down$")
	ns1.noPing("10.78.0.2")
	gvvhStartTestpmd(t, sock, true)
	e.gvvhWaitColumn(t, "gvvhc0", "link_state", "^up$")
	ns1.waitPing("10.78.0.2")
	if n, _ := strconv.Atoi(e.gvvhColumn("gvvhc0", "link_resets")); n < 1 {
		t.Errorf("link_resets %d after a reconnection", n)
	}
	if got := e.gvvhColumn("gvvhc0", "status:status"); got != "connected" {
		t.Errorf("status:status %q", got)
	}
	if got := e.gvvhColumn("gvvhc0", "error"); got != "" && got != "[]" {
		t.Errorf("error %s", got)
	}
}

// TestVswitchdVhostZeroCopyForward: testpmd txonly -> a govs bridge ->
// testpmd rxonly over two dpdkvhostuserclient ports with
// options:dq-zero-copy=true and two queue pairs each: the 1024-byte frames
// go from one guest's memory into the other's through the datapath (the
// NORMAL bridge floods them: testpmd's destination MAC is never learnt),
// both ports run the queues the guest set up, and every count matches.
func TestVswitchdVhostZeroCopyForward(t *testing.T) {
	vswNeedRoot(t)
	gvvhNeedTestpmd(t)
	e := vswNewEnv(t)
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.sock"), filepath.Join(dir, "out.sock")
	rx := testpmd.Start(t, testpmd.Options{Socket: out, Server: true, Mode: "rxonly", Queues: 2})
	tx := testpmd.Start(t, testpmd.Options{Socket: in, Server: true, Mode: "txonly", Queues: 2, Extra: []string{"--txpkts=1024"}})
	gvvhWaitSocket(t, in)
	gvvhWaitSocket(t, out)
	e.mustVsctl("add-br", "gvvhbr2", "--", "set", "bridge", "gvvhbr2", "datapath_type=netdev",
		"--", "add-port", "gvvhbr2", "gvvhz1", "--", "set", "interface", "gvvhz1", "type=dpdkvhostuserclient",
		"options:vhost-server-path="+in, "options:dq-zero-copy=true",
		"--", "add-port", "gvvhbr2", "gvvhz2", "--", "set", "interface", "gvvhz2", "type=dpdkvhostuserclient",
		"options:vhost-server-path="+out, "options:dq-zero-copy=true")
	e.gvvhWaitColumn(t, "gvvhz1", "status:dq-zero-copy-active", "^true$")
	e.gvvhWaitColumn(t, "gvvhz2", "link_state", "^up$")
	e.gvvhWaitColumn(t, "gvvhz1", "statistics:dq_zero_copy_packets", "^[0-9]{5,}$")
	for _, p := range []string{"gvvhz1", "gvvhz2"} {
		if q := e.gvvhColumn(p, "status:n_rxq") + "/" + e.gvvhColumn(p, "status:n_txq"); q != "2/2" {
			t.Errorf("%s: n_rxq/n_txq %s with a guest of 2 queue pairs", p, q)
		}
	}
	tx.Stop()
	// What is in flight reaches rxonly (the loss allowed below covers
	// what cannot).
	if !rx.WaitRxSettled(vswTimeout) {
		t.Error("testpmd rxonly's received count did not settle")
	}
	rx.Stop()
	_, sent, err := tx.Totals()
	if err != nil {
		t.Fatal(err)
	}
	received, _, err := rx.Totals()
	if err != nil {
		t.Fatal(err)
	}
	stat := func(name, key string) uint64 {
		n, _ := strconv.ParseUint(e.gvvhColumn(name, "statistics:"+key), 10, 64)
		return n
	}
	// The statistics column is written every 5 s. What testpmd put in its
	// two 256-entry transmit rings just before it stopped may never be
	// read: the device goes with it; likewise what govs put in the
	// receiving testpmd's rings as it stopped polling them.
	var lastRead, lastWrote uint64
	for deadline := time.Now().Add(vswTimeout); ; time.Sleep(200 * time.Millisecond) {
		lastRead, lastWrote = stat("gvvhz1", "rx_packets"), stat("gvvhz2", "tx_packets")
		if lastWrote >= received && lastWrote-received <= 2*256 && lastRead <= sent && sent-lastRead <= 2*256 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("statistics after %v: gvvhz1 read %d of the %d testpmd sent, gvvhz2 wrote %d of which testpmd received %d",
				vswTimeout, lastRead, sent, lastWrote, received)
		}
	}
	read, zc, copied := stat("gvvhz1", "rx_packets"), stat("gvvhz1", "dq_zero_copy_packets"), stat("gvvhz1", "dq_zero_copy_copied")
	wrote, dropped := stat("gvvhz2", "tx_packets"), stat("gvvhz2", "tx_dropped")
	t.Logf("testpmd sent %d; govs read %d (%d from guest memory, %d copied), wrote %d, dropped %d; testpmd received %d",
		sent, read, zc, copied, wrote, dropped, received)
	if received == 0 {
		t.Error("testpmd rxonly received nothing")
	}
	if zc+copied != read || zc < read/2 {
		t.Errorf("%d frames read, %d of them from guest memory and %d copied", read, zc, copied)
	}
	// Frames of the bridge's own port, if any, are flooded to gvvhz2 too.
	if wrote+dropped < read {
		t.Errorf("read %d frames, wrote %d and dropped %d", read, wrote, dropped)
	}
}
