package bridge

import (
	"testing"
	"time"

	"github.com/govs/govs/schema/vswitchd"
	"github.com/govs/govs/vswitchd/ofproto/connmgr"
)

func TestBundleIdleTimeout(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    time.Duration
		problem bool
	}{
		{"", connmgr.DefaultBundleIdleTimeout, false}, // unset
		{"1", time.Second, false},
		{"30", 30 * time.Second, false},
		{"0", connmgr.DefaultBundleIdleTimeout, true},
		{"-5", connmgr.DefaultBundleIdleTimeout, true},
		{"1.5", connmgr.DefaultBundleIdleTimeout, true},
		{"ten", connmgr.DefaultBundleIdleTimeout, true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			ovs := vswitchd.OpenvSwitch{UUID: "u", OtherConfig: map[string]string{}}
			if tc.in != "" {
				ovs.OtherConfig[KeyBundleIdleTimeout] = tc.in
			}
			d := BuildIn(Rows{OpenVSwitch: []vswitchd.OpenvSwitch{ovs}}, t.TempDir())
			if d.BundleIdle.Value != tc.want || d.BundleIdle.Bad != tc.problem || (len(d.Problems) > 0) != tc.problem {
				t.Errorf("got %+v, problems %q", d.BundleIdle, d.Problems)
			}
		})
	}
}
