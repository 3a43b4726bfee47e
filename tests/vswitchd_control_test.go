package tests

// ovs-vswitchd control path against Debian's ovsdb-server and OVS's own
// tools: write-back, errors, unixctl output formats, restarts, the lock.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestVswitchdInterfaceErrors: what Debian's ovs-vsctl prints for a device
// that does not exist and for an unknown type, as with OVS, and bad input
// that leaves the rest of the switch working.
func TestVswitchdInterfaceErrors(t *testing.T) {
	t.Parallel()
	e := vswNewEnv(t)
	a := vswAddNS(t, "er-a", "10.91.0.1/24")
	b := vswAddNS(t, "er-b", "10.91.0.2/24")
	e.mustVsctl("add-br", "gvswerbr", "--", "add-port", "gvswerbr", a.Host, "--", "add-port", "gvswerbr", b.Host)

	// OVS 3.1 prints exactly this (on stderr) and exits 0.
	out, err := e.vsctl("add-port", "gvswerbr", "nosuchdev")
	if err != nil {
		t.Fatalf("add-port nosuchdev exited non-zero (OVS exits 0): %v", err)
	}
	want := "ovs-vsctl: Error detected while setting up 'nosuchdev': could not open network device nosuchdev (No such device).  See ovs-vswitchd log for details.\n"
	if !strings.HasPrefix(out, want) {
		t.Errorf("add-port nosuchdev printed\n%q\nwant prefix\n%q", out, want)
	}
	if got := e.ofport("nosuchdev"); got != -1 {
		t.Errorf("nosuchdev ofport %d, want -1", got)
	}

	out, _ = e.vsctl("add-port", "gvswerbr", "gvswerx", "--", "set", "interface", "gvswerx", "type=foobar")
	want = "ovs-vsctl: Error detected while setting up 'gvswerx': could not open network device gvswerx (Address family not supported by protocol).  See ovs-vswitchd log for details.\n"
	if !strings.HasPrefix(out, want) {
		t.Errorf("unknown type printed\n%q\nwant prefix\n%q", out, want)
	}
	out, _ = e.vsctl("add-port", "gvswerbr", "gvswerp", "--", "set", "interface", "gvswerp", "type=patch")
	if !strings.Contains(out, "gvswerp: patch type requires valid 'peer' argument") {
		t.Errorf("patch without peer printed %q", out)
	}

	// Bad input elsewhere: a duplicate ofport_request, nonsense
	// other_config, an internal port named like another bridge.
	e.mustVsctl("set", "interface", a.Host, "ofport_request=7")
	e.mustVsctl("add-port", "gvswerbr", "gvswerdup", "--", "set", "interface", "gvswerdup", "type=internal", "ofport_request=7")
	e.mustVsctl("set", "bridge", "gvswerbr", "other_config:mac-aging-time=never", "other_config:datapath-id=xyz", "other_config:hwaddr=zz")
	// A bridge created without its own Port row (add-br would make one,
	// and the database's name index would then refuse the clash), and an
	// internal port of the first bridge named like it.
	e.mustVsctl("--id=@b", "create", "bridge", "name=gvswerb2", "--", "add", "open_vswitch", ".", "bridges", "@b")
	e.mustVsctl("--id=@i", "create", "interface", "name=gvswerb2", "type=internal", "--",
		"--id=@p", "create", "port", "name=gvswerb2", "interfaces=@i", "--", "add", "bridge", "gvswerbr", "ports", "@p")
	if got := e.mustVsctl("get", "interface", "gvswerb2", "error"); got != `"could not add network device gvswerb2 to ofproto (File exists)"` {
		t.Errorf("name clash: error %s", got)
	}
	if p, q := e.ofport(a.Host), e.ofport("gvswerdup"); p != 7 || q <= 0 || q == 7 {
		t.Errorf("ofport_request 7 twice gave %d and %d", p, q)
	}
	if dpid := e.mustVsctl("get", "bridge", "gvswerbr", "datapath_id"); !regexp.MustCompile(`^"[0-9a-f]{16}"$`).MatchString(dpid) {
		t.Errorf("datapath_id %s", dpid)
	}

	a.waitPing("10.91.0.2")
	if _, err := e.appctl("version"); err != nil {
		t.Fatalf("switch stopped serving: %v", err)
	}
	b2, _ := os.ReadFile(e.logPath())
	if !strings.Contains(string(b2), "|bridge|WARN|could not open network device nosuchdev (No such device)") {
		t.Errorf("log lacks the WARN for nosuchdev:\n%s", vswTail(string(b2), 20))
	}
}

// TestVswitchdAppctl: the unixctl commands through Debian's ovs-appctl, in
// OVS's formats.
func TestVswitchdAppctl(t *testing.T) {
	t.Parallel()
	e := vswNewEnv(t)
	a := vswAddNS(t, "ap-a", "10.92.0.1/24")
	e.mustVsctl("add-br", "gvswapbr", "--", "set", "bridge", "gvswapbr", "datapath_type=netdev",
		"--", "add-port", "gvswapbr", a.Host, "--", "add-port", "gvswapbr", "gvswapi", "--", "set", "interface", "gvswapi", "type=internal",
		"--", "add-port", "gvswapbr", "gvswapp", "--", "set", "interface", "gvswapp", "type=patch", "options:peer=gvswapq")

	show := e.mustAppctl("dpif/show")
	// Ports sorted by name; the host end of a's veth is "gvswap-a".
	re := regexp.MustCompile(`^netdev@ovs-netdev: hit:\d+ missed:\d+
  gvswapbr:
    gvswap-a 1/\d+: \(system\)
    gvswapbr 65534/\d+: \(tap\)
    gvswapi 2/\d+: \(tap\)
    gvswapp 3/none: \(patch: peer=gvswapq\)
$`)
	if !re.MatchString(show) {
		t.Errorf("dpif/show:\n%s", show)
	}
	// dpctl/show: the datapath's ports by number, patch ports left out
	// (OVS also lists its port 0, ovs-netdev, which govs does not have).
	dps := e.mustAppctl("dpctl/show")
	m := regexp.MustCompile(`^netdev@ovs-netdev:
  lookups: hit:\d+ missed:\d+ lost:\d+
  flows: \d+
  port (\d+): (\S+.*)
  port (\d+): (\S+.*)
  port (\d+): (\S+.*)
$`).FindStringSubmatch(dps)
	if m == nil {
		t.Fatalf("dpctl/show:\n%s", dps)
	}
	seen := map[string]bool{}
	var nos []int
	for i := 1; i < len(m); i += 2 {
		n, _ := strconv.Atoi(m[i])
		nos = append(nos, n)
		seen[m[i+1]] = true
	}
	if !slices.IsSorted(nos) {
		t.Errorf("dpctl/show: ports not in number order:\n%s", dps)
	}
	for _, p := range []string{a.Host, "gvswapbr (tap)", "gvswapi (tap)"} {
		if !seen[p] {
			t.Errorf("dpctl/show lacks %q:\n%s", p, dps)
		}
	}
	st := e.mustAppctl("dpctl/show", "-s", "netdev@ovs-netdev")
	if !regexp.MustCompile(`  port \d+: ` + a.Host + `
    RX packets:\d+ errors:\d+ dropped:\d+ overruns:0 frame:0
    TX packets:\d+ errors:\d+ dropped:\d+ aborted:0 carrier:0
    collisions:0
    RX bytes:\d+( \(\d+\.\d [KMGT]iB\))?  TX bytes:\d+( \(\d+\.\d [KMGT]iB\))?
`).MatchString(st) {
		t.Errorf("dpctl/show -s:\n%s", st)
	}
	if out, err := e.appctl("dpctl/show", "nosuch"); err == nil || !strings.HasPrefix(out, "ovs-vswitchd: opening datapath nosuch failed (No such file or directory)\n") {
		t.Errorf("dpctl/show nosuch: %v %q", err, out)
	}
	if out := e.mustAppctl("dpctl/dump-dps"); out != "netdev@ovs-netdev\n" {
		t.Errorf("dpctl/dump-dps: %q", out)
	}
	rxq := e.mustAppctl("dpif-netdev/pmd-rxq-show")
	if !regexp.MustCompile(`^Displaying last 60 seconds pmd usage %
(pmd thread numa_id 0 core_id \d+:
  isolated : false
  port: \S+ +queue-id:  0 \(enabled\)   pmd usage: (NOT AVAIL|[ \d]\d %)
  overhead: (NOT AVAIL|[ \d]\d %)
){3}$`).MatchString(rxq) {
		t.Errorf("dpif-netdev/pmd-rxq-show:\n%s", rxq)
	}
	for cmd, want := range map[string]string{
		"list-commands": "The available commands are:\n",
		"memory/show":   "ports:",
		"coverage/show": "Event coverage, avg rate over last: 5 seconds, last minute, last hour,  hash=",
		"version":       "ovs-vswitchd",
	} {
		if out := e.mustAppctl(cmd); !strings.Contains(out, want) {
			t.Errorf("%s:\n%s\nlacks %q", cmd, out, want)
		}
	}
	lc := e.mustAppctl("list-commands")
	for _, c := range []string{"exit", "vlog/set", "vlog/list", "memory/show", "coverage/show", "dpif/show", "dpctl/show", "fdb/show", "fdb/flush", "fdb/stats-show"} {
		if !strings.Contains(lc, "\n  "+c+" ") {
			t.Errorf("list-commands lacks %s", c)
		}
	}
	if !strings.Contains(lc, "  fdb/show                bridge\n") || !strings.Contains(lc, "  exit                    [--cleanup]\n") {
		t.Errorf("list-commands usage strings differ from OVS:\n%s", lc)
	}

	// Unknown bridges: OVS's error text, ovs-appctl exits 2.
	for _, args := range [][]string{{"fdb/show", "nosuch"}, {"fdb/flush", "nosuch"}, {"fdb/stats-show", "nosuch"}} {
		out, err := e.appctl(args...)
		if err == nil || !strings.HasPrefix(out, "no such bridge\n") || !strings.Contains(err.Error(), "exit status 2") {
			t.Errorf("%v: %v %q", args, err, out)
		}
	}
	if out := e.mustAppctl("fdb/flush"); out != "table successfully flushed\n" {
		t.Errorf("fdb/flush: %q", out)
	}
	if out := e.mustAppctl("fdb/show", "gvswapbr"); !strings.HasPrefix(out, " port  VLAN  MAC                Age\n") {
		t.Errorf("fdb/show: %q", out)
	}
	if out := e.mustAppctl("fdb/stats-show", "gvswapbr"); !strings.Contains(out, "Statistics for bridge \"gvswapbr\":") {
		t.Errorf("fdb/stats-show: %q", out)
	}
	e.mustAppctl("vlog/set", "bridge:file:dbg")
	if out := e.mustAppctl("vlog/list"); !regexp.MustCompile(`(?m)^bridge +\S+ +\S+ +DBG$`).MatchString(out) {
		t.Errorf("vlog/list after vlog/set bridge:file:dbg:\n%s", out)
	}

	// Status write-back (every 5 s, and at attach).
	vswWait(t, vswTimeout, "interface status", func() bool {
		out, _ := e.vsctl("--columns=link_state,admin_state,mtu,ifindex,mac_in_use,statistics", "list", "interface", a.Host)
		return strings.Contains(out, "link_state          : up") && strings.Contains(out, "rx_packets=") && strings.Contains(out, "mtu                 : 1500")
	})

	// mtu_request applies to the device, live, and shows in Interface.mtu.
	e.mustVsctl("set", "interface", "gvswapi", "mtu_request=1400")
	if mtu := e.mustVsctl("get", "interface", "gvswapi", "mtu"); mtu != "1400" {
		t.Errorf("Interface.mtu %s after mtu_request=1400", mtu)
	}
	if b, _ := os.ReadFile("/sys/class/net/gvswapi/mtu"); strings.TrimSpace(string(b)) != "1400" {
		t.Errorf("gvswapi kernel MTU %q after mtu_request=1400", b)
	}

	// exit --cleanup removes the bridge's tap devices.
	e.stopSwitch(true)
	for _, dev := range []string{"gvswapbr", "gvswapi"} {
		if _, err := os.Stat(filepath.Join("/sys/class/net", dev)); err == nil {
			t.Errorf("%s still exists after exit --cleanup", dev)
		}
	}
}

// TestVswitchdRestarts: ofports survive a switch restart; the switch
// resynchronises after the database restarts; a second switch waits on
// the lock until the first goes away.
func TestVswitchdRestarts(t *testing.T) {
	t.Parallel()
	e := vswNewEnv(t)
	a := vswAddNS(t, "rs-a", "10.93.0.1/24")
	b := vswAddNS(t, "rs-b", "10.93.0.2/24")
	e.mustVsctl("add-br", "gvswrsbr", "--", "add-port", "gvswrsbr", a.Host, "--", "add-port", "gvswrsbr", "gvswrsi", "--",
		"set", "interface", "gvswrsi", "type=internal", "--", "add-port", "gvswrsbr", b.Host)
	a.waitPing("10.93.0.2")
	before := map[string]int{}
	for _, n := range []string{a.Host, b.Host, "gvswrsi", "gvswrsbr"} {
		before[n] = e.ofport(n)
	}

	// Switch restart: the same numbers, traffic resumes.
	e.stopSwitch(false)
	e.startSwitch()
	for n, want := range before {
		if got := e.ofport(n); got != want {
			t.Errorf("%s: ofport %d after restart, was %d", n, got, want)
		}
	}
	a.waitPing("10.93.0.2")

	// Database restart: the switch reconnects and follows new changes.
	e.stopDB()
	e.startDB()
	c := vswAddNS(t, "rs-c", "10.93.0.3/24")
	e.mustVsctl("add-port", "gvswrsbr", c.Host)
	if got := e.ofport(c.Host); got <= 0 {
		t.Fatalf("%s ofport %d after database restart", c.Host, got)
	}
	c.waitPing("10.93.0.1")

	// A second switch on the same database waits for the lock.
	log2 := filepath.Join(e.dir, "second.log")
	second := exec.Command(e.bin, "unix:"+e.sock(), "--pidfile="+filepath.Join(e.dir, "second.pid"), "--no-chdir",
		"--log-file="+log2, "--unixctl="+filepath.Join(e.dir, "second.ctl"), "-vconsole:off")
	second.Env = append(os.Environ(), "OVS_RUNDIR="+e.dir)
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		vswKill(t, second.Process.Pid)
		second.Wait()
	})
	vswWait(t, vswTimeout, "the second switch to report the lock", func() bool {
		b, _ := os.ReadFile(log2)
		return strings.Contains(string(b), fmt.Sprintf("|bridge|ERR|another ovs-vswitchd process is running, disabling this process (pid %d) until it goes away", second.Process.Pid))
	})
	e.stopSwitch(false)
	vswWait(t, vswTimeout, "the second switch to take over", func() bool {
		b, _ := os.ReadFile(log2)
		return strings.Contains(string(b), "bridge gvswrsbr: added interface "+a.Host)
	})
	a.waitPing("10.93.0.2")
}
