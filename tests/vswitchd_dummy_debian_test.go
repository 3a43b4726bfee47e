package tests

import (
	"path/filepath"
	"slices"
	"testing"
)

// TestDummyVsDebian runs the scenario on govs and on Debian's
// ovs-vswitchd --enable-dummy (which creates no kernel device either) and
// requires the same frames in the pcap files, the same counters and the
// same replies.
func TestDummyVsDebian(t *testing.T) {
	deb := &dummyRig{ofSwitch: startDebianSwitch(t, "--enable-dummy", "--disable-system", "--disable-system-route")}
	deb.ctl = filepath.Join(deb.dir, "ovs-vswitchd.ctl")
	want := dummyScenario(deb)
	got := dummyScenario(startGovsDummy(t))
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if got[k] != want[k] {
			t.Errorf("%s:\n govs:   %s\n Debian: %s", k, got[k], want[k])
		}
	}
}
