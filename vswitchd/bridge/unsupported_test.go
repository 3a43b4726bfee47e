package bridge

import (
	"slices"
	"testing"

	"github.com/govs/govs/schema/vswitchd"
)

func TestUnsupportedReported(t *testing.T) {
	var d db
	br := d.bridge("br0", "p1", "p2", "vh:dpdkvhostuserclient")
	br.STPEnable, br.RSTPEnable = true, true
	br.OtherConfig = map[string]string{"stp-priority": "1", "rstp-priority": "4096", "rstp-hello-time": "2", "mac-aging-time": "30",
		// What govs does anyway: it never installs in-band flows.
		"disable-in-band": "true"}
	sflow := "s1"
	br.Sflow = &sflow
	// p1 becomes a bond of p1 and p2.
	p1, p2 := d.port("p1"), d.port("p2")
	p1.Interfaces = append(p1.Interfaces, p2.Interfaces...)
	p1.Name = "bond0"
	mode := vswitchd.PortBondModeActiveBackup
	p1.BondMode = &mode
	br.Ports = slices.DeleteFunc(br.Ports, func(u string) bool { return u == p2.UUID })
	mpid := 1
	d.iface("p1").CFMMpid = &mpid
	d.iface("p1").Options = map[string]string{"foo": "bar"}
	d.iface("p2").OtherConfig = map[string]string{"pmd-rxq-affinity": "0:1"}
	d.iface("vh").Options = map[string]string{OptDQZeroCopy: "maybe", OptTxRetriesMax: "999"}

	got := Build(d.rows).Problems
	want := []string{
		"br0: RSTP and STP are mutually exclusive but both are configured; enabling RSTP",
		"bridge br0: sflow (sFlow) " + notRunning,
		"bridge br0: other_config:rstp-hello-time " + notRunning,
		"interface p1: cfm_mpid (CFM) " + notRunning,
		"interface p2: other_config:pmd-rxq-affinity " + notRunning,
		"p1: arguments provided to device that is not configurable",
		"port bond0: cannot enable RSTP on bonds, disabling",
		`interface vh: ignoring invalid options:dq-zero-copy="maybe" (must be "true" or "false"; using "false")`,
		`interface vh: ignoring invalid options:tx-retries-max="999" (must be an integer in the range 0..32; using the default, 8)`,
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("missing problem %q", w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("problems:\n%q\nwant:\n%q", got, want)
	}
}
