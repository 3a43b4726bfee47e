package datapath

import (
	"strings"
	"testing"
)

// The texts below are Debian's ovs-vswitchd 3.1 (netdev datapath) answers
// (the e2e TestOpenFlowCtIPFDifferential compares them live).
func TestIPFCommands(t *testing.T) {
	dp := newDatapath(nil, nil)
	defer dp.Close()
	run := func(cmd string, args ...string) (string, error) {
		for _, c := range dp.IPFCommands() {
			if c.Name == "dpctl/"+cmd {
				return c.Fn(args)
			}
		}
		t.Fatalf("no command %s", cmd)
		return "", nil
	}
	for _, c := range []struct {
		args      []string
		want, err string
	}{
		{[]string{"ipf-set-enabled", "v5"}, "", "ovs-vswitchd: parameter missing: 'v4' for IPv4 or 'v6' for IPv6 (Invalid argument)"},
		{[]string{"ipf-set-enabled", "-m"}, "", "ovs-vswitchd: parameter missing: 'v4' for IPv4 or 'v6' for IPv6 (Invalid argument)"},
		{[]string{"ipf-set-disabled", "bogus", "v6x"}, "disabling fragmentation reassembly successful", ""},
		{[]string{"ipf-set-min-frag", "v4", "399"}, "", "ovs-vswitchd: requested minimum fragment size too small; see documentation (Operation not permitted)"},
		{[]string{"ipf-set-min-frag", "v6", "x"}, "", "ovs-vswitchd: parameter missing for minimum fragment size (Invalid argument)"},
		{[]string{"ipf-set-min-frag", "v7", "1000"}, "", "ovs-vswitchd: parameter missing: v4 for IPv4 or v6 for IPv6 (Invalid argument)"},
		{[]string{"ipf-set-min-frag", "bogus", "v4", "1000"}, "", "ovs-vswitchd: datapath not found (Invalid argument)"},
		{[]string{"ipf-set-min-frag", " v4", " +1300x"}, "setting minimum fragment size successful", ""},
		{[]string{"ipf-set-max-nfrags", "5001"}, "", "ovs-vswitchd: setting maximum fragments failed (Operation not permitted)"},
		{[]string{"ipf-set-max-nfrags", CurrentName(), "-4294962296"}, "setting maximum fragments successful", ""}, // 5000 modulo 2^32
		{[]string{"ipf-set-max-nfrags", "bogus", "10"}, "", "ovs-vswitchd: datapath not found (Invalid argument)"},
		{[]string{"ipf-get-status", "bogus"}, "", "ovs-vswitchd: datapath not found (Invalid argument)"},
		{[]string{"ipf-get-status", "-x"}, "", "Unrecognized option -x"},
	} {
		got, err := run(c.args[0], c.args[1:]...)
		if errs := ""; err != nil {
			if errs = err.Error(); errs != c.err {
				t.Errorf("%v: error %q, want %q", c.args, errs, c.err)
			}
		} else if c.err != "" {
			t.Errorf("%v: no error, want %q", c.args, c.err)
		}
		if got != c.want {
			t.Errorf("%v: %q, want %q", c.args, got, c.want)
		}
	}
	got, err := run("ipf-get-status", "-m", CurrentName())
	want := `        Fragmentation Module Status
        ---------------------------
        v4 enabled: 1
        v6 enabled: 0
        max num frags (v4/v6): 5000
        num frag: 0
        min v4 frag size: 1300
        v4 frags accepted: 0
`
	if err != nil || !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "v6 frags purged: 0\n\n        Fragment Lists:\n\n") {
		t.Errorf("ipf-get-status -m: %v\n%s", err, got)
	}
}
