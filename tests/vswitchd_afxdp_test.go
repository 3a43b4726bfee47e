package tests

// End-to-end test of type=afxdp interfaces (AF_XDP sockets, an XDP program
// on the device). Kernel objects are named gvxd*.

import (
	"fmt"
	"strings"
	"testing"
)

// TestVswitchdAFXDP: two afxdp ports on veths (native and best-effort, which
// settles on native: veth has no zero-copy) pass ping and iperf3; the mode
// in use is in Interface.status; a bad xdp-mode is refused with OVS's text;
// a mode the device cannot do says why in Interface.error; the XDP program
// goes with the port.
func TestVswitchdAFXDP(t *testing.T) {
	e := vswNewEnv(t)
	a := vswAddPrefixedNS(t, "gvxd", "a", "10.251.81.1/24")
	b := vswAddPrefixedNS(t, "gvxd", "b", "10.251.81.2/24")
	// An AF_XDP frame carries no partial-checksum metadata: the senders
	// complete their checksums, as OVS's AF_XDP documentation sets up.
	for _, ns := range []*vswNS{a, b} {
		ns.mustExec("ethtool", "-K", "eth0", "tx", "off")
	}
	const br = "gvxdbr"
	e.mustVsctl("add-br", br, "--", "set", "bridge", br, "datapath_type=netdev",
		"--", "add-port", br, a.Host, "--", "set", "interface", a.Host, "type=afxdp", "options:xdp-mode=native",
		"--", "add-port", br, b.Host, "--", "set", "interface", b.Host, "type=afxdp")
	a.waitPing("10.251.81.2")
	for _, ns := range []*vswNS{a, b} {
		gvxdWaitMode(e, ns.Host, "native")
		if !gvxdAttached(t, ns.Host) {
			t.Errorf("%s: no XDP program attached", ns.Host)
		}
	}
	out := a.iperf(b, "10.251.81.2", "-t", "2")
	t.Logf("iperf3 through afxdp: %s", vswIperfSummary(out))

	e.mustVsctl("set", "interface", a.Host, "options:xdp-mode=bogus")
	want := fmt.Sprintf("%q", a.Host+": Incorrect xdp-mode (bogus).")
	vswWait(t, vswTimeout, "xdp-mode=bogus refused", func() bool {
		return strings.TrimSpace(e.mustVsctl("get", "interface", a.Host, "error")) == want
	})
	if got := e.ofport(a.Host); got != -1 {
		t.Errorf("xdp-mode=bogus: ofport %d, want -1", got)
	}
	vswWait(t, vswTimeout, "the program to go with the port", func() bool { return !gvxdAttached(t, a.Host) })

	e.mustVsctl("set", "interface", a.Host, "options:xdp-mode=native-with-zerocopy")
	vswWait(t, vswTimeout, "zero-copy refused", func() bool {
		return strings.Contains(e.mustVsctl("get", "interface", a.Host, "error"), "could not open network device "+a.Host)
	})
	t.Logf("zero-copy on a veth: %s", strings.TrimSpace(e.mustVsctl("get", "interface", a.Host, "error")))
	if gvxdAttached(t, a.Host) {
		t.Errorf("%s: XDP program left after a failed open", a.Host)
	}

	e.mustVsctl("set", "interface", a.Host, "options:xdp-mode=generic")
	gvxdWaitMode(e, a.Host, "generic")
	a.waitPing("10.251.81.2")

	e.mustVsctl("del-port", br, b.Host)
	vswWait(t, vswTimeout, "the program to go with the port", func() bool { return !gvxdAttached(t, b.Host) })
}

// gvxdAttached reports whether dev has an XDP program.
func gvxdAttached(t *testing.T, dev string) bool {
	out, err := vswRun("ip", "link", "show", "dev", dev)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(out, " prog/xdp")
}

// gvxdWaitMode waits until name's status:xdp-mode-in-use is mode.
func gvxdWaitMode(e *vswEnv, name, mode string) {
	e.t.Helper()
	vswWait(e.t, vswTimeout, name+" in xdp-mode "+mode, func() bool {
		out, _ := e.vsctl("--if-exists", "get", "interface", name, "status:xdp-mode-in-use")
		return strings.Trim(strings.TrimSpace(out), `"`) == mode
	})
}
