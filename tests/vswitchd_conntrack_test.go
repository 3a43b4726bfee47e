package tests

import (
	"strings"
	"testing"
)

// The dpctl/ conntrack commands answer Debian's ovs-appctl as Debian's
// ovs-vswitchd 3.1 (netdev datapath) does on an empty table: the texts
// below are its outputs and errors.
func TestVswitchdConntrackCommands(t *testing.T) {
	e := vswNewEnv(t)
	e.mustVsctl("add-br", "br0", "--", "set", "bridge", "br0", "datapath_type=netdev")
	for _, c := range []struct {
		args []string
		want string // output, or the error text for a failure
		fail bool
	}{
		{[]string{"dpctl/dump-conntrack"}, "", false},
		{[]string{"dpctl/dump-conntrack", "-m", "zone=1"}, "", false},
		{[]string{"dpctl/dump-conntrack", "foo"}, "ovs-vswitchd: datapath not found (Invalid argument)", true},
		{[]string{"dpctl/ct-stats-show"}, "Connections Stats:\n    Total: 0\n", false},
		{[]string{"dpctl/ct-get-maxconns"}, "3000000\n", false},
		{[]string{"dpctl/ct-set-maxconns", "10"}, "setting maxconns successful\n", false},
		{[]string{"dpctl/ct-get-maxconns"}, "10\n", false},
		{[]string{"dpctl/ct-set-maxconns", "x"}, "ovs-vswitchd: maxconns missing or malformed (Invalid argument)", true},
		{[]string{"dpctl/ct-set-maxconns"}, `"dpctl/ct-set-maxconns" command requires at least 1 arguments`, true},
		{[]string{"dpctl/ct-get-nconns"}, "0\n", false},
		{[]string{"dpctl/ct-set-limits", "default=5", "zone=1,limit=3", "zone=2,limit=4"}, "", false},
		{[]string{"dpctl/ct-get-limits", "zone=1,2,7"}, "default limit=5\nzone=1,limit=3,count=0\nzone=2,limit=4,count=0\nzone=7,limit=5,count=0\n", false},
		{[]string{"dpctl/ct-set-limits", "zone=x,limit=1"}, "ovs-vswitchd: failed to parse field zone (Invalid argument)", true},
		{[]string{"dpctl/ct-del-limits", "zone=1"}, "", false},
		{[]string{"dpctl/ct-get-limits"}, "default limit=5\nzone=2,limit=4,count=0\n", false},
		{[]string{"dpctl/ct-del-limits", "foo"}, "ovs-vswitchd: invalid argument foo (Invalid argument)", true},
		{[]string{"dpctl/flush-conntrack"}, "", false},
		{[]string{"dpctl/flush-conntrack", "bogus"}, "ovs-vswitchd: field bogus missing value (Invalid argument)", true},
		{[]string{"dpctl/ct-bkts"}, "Total Buckets: 1\nCurrent Connections: 0\n\n", false},
		{[]string{"dpctl/ct-disable-tcp-seq-chk"}, "disabling TCP sequence checking successful\n", false},
		{[]string{"dpctl/ct-get-tcp-seq-chk"}, "TCP sequence checking: disabled\n", false},
	} {
		out, err := e.appctl(c.args...)
		switch {
		case c.fail && err == nil:
			t.Errorf("%v: succeeded with %q, want the error %q", c.args, out, c.want)
		case c.fail && !strings.Contains(out, c.want):
			t.Errorf("%v: %q, want the error %q", c.args, out, c.want)
		case !c.fail && err != nil:
			t.Errorf("%v: %v", c.args, err)
		case !c.fail && out != c.want:
			t.Errorf("%v: %q, want %q", c.args, out, c.want)
		}
	}
}

// ovn-controller creates the Datapath row and reads its capabilities: the
// switch fills in the keys OVS writes, true for what govs does.
func TestVswitchdDatapathCapabilities(t *testing.T) {
	e := vswNewEnv(t)
	uuid := e.mustVsctl("--", "--id=@dp", "create", "Datapath", "datapath_version=0", "--", "set", "Open_vSwitch", ".", "datapaths:netdev=@dp")
	e.mustVsctl("wait-until", "Datapath", uuid, "capabilities:ct_state=true")
	got := e.mustVsctl("get", "Datapath", uuid, "capabilities")
	want := `{add_mpls="false", check_pkt_len="true", clone="false", ct_clear="true", ct_eventmask="false", ct_flush="false", ` +
		`ct_label="true", ct_mark="true", ct_orig_tuple="true", ct_orig_tuple6="true", ct_state="true", ct_state_nat="true", ` +
		`ct_timeout="true", ct_zero_snat="false", ct_zone="true", explicit_drop_action="false", lb_output_action="false", ` +
		`masked_set_action="false", max_hash_alg="1", max_mpls_depth="0", max_vlan_headers="1", nd_ext="false", recirc="true", ` +
		`sample_nesting="false", tnl_push_pop="false", trunc="false", ufid="true"}`
	if got != want {
		t.Errorf("capabilities\n got %s\nwant %s", got, want)
	}
}
