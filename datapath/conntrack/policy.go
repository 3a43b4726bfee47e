package conntrack

import (
	"fmt"
	"sort"
	"time"
)

// Timeout policies (OVS's lib/conntrack-tp.c). A connection committed
// with Action.TimeoutPolicy set keeps that policy's ID; each time its
// timeout is due again it is read from the policy the ID names now, so a
// changed policy applies to the connections of its ID from their next
// packet, and the default policy applies when the ID names none.

// DefaultPolicy is the ID of the default timeout policy (OVS's
// DEFAULT_TP_ID); Action.TimeoutPolicy 0 means it.
const DefaultPolicy = 0

// PolicyAttrs are the timeout policy attributes, in OVS's order
// (CT_DPIF_TP_*_ATTRS), as the CT_Timeout_Policy table names them.
var PolicyAttrs = []string{
	"tcp_syn_sent", "tcp_syn_recv", "tcp_established", "tcp_fin_wait", "tcp_close_wait",
	"tcp_last_ack", "tcp_time_wait", "tcp_close", "tcp_syn_sent2", "tcp_retransmit", "tcp_unack",
	"udp_first", "udp_single", "udp_multiple", "icmp_first", "icmp_reply",
}

// policyAttr maps each timeout to the attribute that sets it (OVS's
// tm_to_ct_dpif_tp). UDP's attributes also time other protocols, as OVS's.
// tcp_close_wait, tcp_last_ack, tcp_syn_sent2, tcp_retransmit and
// tcp_unack are accepted but time nothing: OVS's userspace TCP tracker
// has no such states.
var policyAttr = [nTimeouts]string{
	tmTCPFirst:       "tcp_syn_sent",
	tmTCPOpening:     "tcp_syn_recv",
	tmTCPEstablished: "tcp_established",
	tmTCPClosing:     "tcp_fin_wait",
	tmTCPFinWait:     "tcp_time_wait",
	tmTCPClosed:      "tcp_close",
	tmOtherFirst:     "udp_first",
	tmOtherMultiple:  "udp_single",
	tmOtherBidir:     "udp_multiple",
	tmICMPFirst:      "icmp_first",
	tmICMPReply:      "icmp_reply",
}

// TimeoutPolicy maps attributes of PolicyAttrs to seconds; an attribute
// left out keeps the default policy's value.
type TimeoutPolicy map[string]uint32

// policyTable is the timeout of each entry under each policy ID;
// replaced whole on change.
type policyTable map[uint32]*[nTimeouts]time.Duration

// SetTimeoutPolicy creates or replaces the policy id; 0 (the default
// policy) cannot be replaced. An unknown attribute is refused and nothing
// changes.
func (t *Tracker) SetTimeoutPolicy(id uint32, p TimeoutPolicy) error {
	if id == DefaultPolicy {
		return fmt.Errorf("conntrack: timeout policy %d is the default policy", id)
	}
	var names []string
	for a := range p {
		names = append(names, a)
	}
	sort.Strings(names)
	for _, a := range names {
		if !knownAttr(a) {
			return fmt.Errorf("conntrack: unknown timeout policy attribute %q", a)
		}
	}
	tms := defaultTimeouts
	for tm, a := range policyAttr {
		if v, ok := p[a]; ok {
			tms[tm] = time.Duration(v) * time.Second
		}
	}
	t.polMu.Lock()
	defer t.polMu.Unlock()
	nt := policyTable{id: &tms}
	for k, v := range *t.policies.Load() {
		if k != id {
			nt[k] = v
		}
	}
	t.policies.Store(&nt)
	return nil
}

// DelTimeoutPolicy removes the policy id: its connections go back to the
// default timeouts from their next packet. It reports whether there was
// one.
func (t *Tracker) DelTimeoutPolicy(id uint32) bool {
	t.polMu.Lock()
	defer t.polMu.Unlock()
	old := *t.policies.Load()
	if _, ok := old[id]; !ok {
		return false
	}
	nt := policyTable{}
	for k, v := range old {
		if k != id {
			nt[k] = v
		}
	}
	t.policies.Store(&nt)
	return true
}

// TimeoutPolicies returns the IDs of the policies set, sorted.
func (t *Tracker) TimeoutPolicies() []uint32 {
	var ids []uint32
	for id := range *t.policies.Load() {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

func knownAttr(a string) bool {
	for _, k := range PolicyAttrs {
		if k == a {
			return true
		}
	}
	return false
}

// timeoutOf is how long entry tm of policy id lasts: the default
// policy's value if there is no such policy.
func (t *Tracker) timeoutOf(id uint32, tm timeout) time.Duration {
	if id != DefaultPolicy {
		if p := (*t.policies.Load())[id]; p != nil {
			return p[tm]
		}
	}
	return defaultTimeouts[tm]
}
