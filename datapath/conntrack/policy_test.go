package conntrack

import (
	"testing"
	"time"
)

// TestTimeoutPolicy: a connection committed under a policy takes its
// timeouts (UDP's also for other protocols, TCP's by state), one under
// the default policy keeps OVS's defaults, a changed policy applies from
// a connection's next packet, and a deleted one gives the defaults back.
func TestTimeoutPolicy(t *testing.T) {
	tr, clk := newTracker(t)
	a, b := "10.0.0.1", "10.0.0.2"
	if err := tr.SetTimeoutPolicy(1, TimeoutPolicy{"udp_first": 1, "udp_single": 2, "udp_multiple": 3,
		"icmp_first": 4, "tcp_syn_sent": 5, "tcp_unack": 7}); err != nil {
		t.Fatal(err)
	}
	tp := Action{Commit: true, Zone: 5, TimeoutPolicy: 1}
	def := Action{Commit: true}
	replay(t, tr, clk, []step{
		{"udp under the policy", udp4(a, b, 5000, 53), tp, trk | nw, 0},
		{"udp under the default", udp4(a, b, 5000, 53), def, trk | nw, 0},
		{"icmp under the policy", icmp4(a, b, 8, 0, 7, nil), tp, trk | nw, 0},
		{"syn under the policy", tcp4(a, b, 40000, 80, syn, 1000, 0, ""), tp, trk | nw, 0},
	})
	expiry := func(zone uint16, proto uint8) time.Duration {
		t.Helper()
		var d time.Duration = -1
		tr.each(func(c *conn) bool {
			if c.orig.zone == zone && c.orig.proto == proto {
				d = time.Duration(c.expires.Load() - clk.now())
			}
			return true
		})
		return d
	}
	for _, c := range []struct {
		zone  uint16
		proto uint8
		want  time.Duration
	}{{5, 17, time.Second}, {0, 17, 60 * time.Second}, {5, 1, 4 * time.Second}, {5, 6, 5 * time.Second}} {
		if got := expiry(c.zone, c.proto); got != c.want {
			t.Errorf("zone %d proto %d expires in %v, want %v", c.zone, c.proto, got, c.want)
		}
	}
	// udp_single after a second packet the same way, udp_multiple after
	// a reply.
	replay(t, tr, clk, []step{{"second", udp4(a, b, 5000, 53), Action{Zone: 5}, trk | nw, 0}})
	if got := expiry(5, 17); got != 2*time.Second {
		t.Errorf("udp_single: expires in %v, want 2s", got)
	}
	// A changed policy applies from the next packet.
	if err := tr.SetTimeoutPolicy(1, TimeoutPolicy{"udp_multiple": 9}); err != nil {
		t.Fatal(err)
	}
	replay(t, tr, clk, []step{{"reply", udp4(b, a, 53, 5000), Action{Zone: 5}, trk | est | rpl, 0}})
	if got := expiry(5, 17); got != 9*time.Second {
		t.Errorf("changed udp_multiple: expires in %v, want 9s", got)
	}
	// Gone: the defaults (bidirectional UDP 30 s).
	if !tr.DelTimeoutPolicy(1) || tr.DelTimeoutPolicy(1) {
		t.Error("DelTimeoutPolicy(1) twice: want true, then false")
	}
	replay(t, tr, clk, []step{{"after delete", udp4(a, b, 5000, 53), Action{Zone: 5}, trk | est, 0}})
	if got := expiry(5, 17); got != 30*time.Second {
		t.Errorf("deleted policy: expires in %v, want 30s", got)
	}
	// The UDP connection of the default zone outlives the ICMP one of
	// zone 5 (4 s).
	clk.advance(5 * time.Second)
	tr.Sweep()
	if got := expiry(5, 1); got != -1 {
		t.Errorf("icmp of zone 5 still there %v after its policy's 4 s", got)
	}
	if got := expiry(0, 17); got <= 0 {
		t.Error("udp of the default zone gone after 5 s")
	}
}

func TestTimeoutPolicyRefused(t *testing.T) {
	tr, _ := newTracker(t)
	if err := tr.SetTimeoutPolicy(0, TimeoutPolicy{"udp_first": 1}); err == nil {
		t.Error("policy 0 (the default) replaced")
	}
	if err := tr.SetTimeoutPolicy(2, TimeoutPolicy{"udp_first": 1, "bogus": 2}); err == nil {
		t.Error("unknown attribute accepted")
	}
	if ids := tr.TimeoutPolicies(); len(ids) != 0 {
		t.Errorf("policies after refusals: %v", ids)
	}
}
