package datapath

import (
	"bytes"
	"sync/atomic"
	"testing"

	"github.com/govs/govs/datapath/dptest"
)

// A trunc action shortens only the next output's copy; a count action
// counts the packets as received, and is not shown.
func TestTruncAndCount(t *testing.T) {
	r := newRig(t, 4)
	var calls atomic.Int64
	var c Counter
	acts := Actions{Count(&c), Trunc(20), Output(2), Output(3), PushVLAN(0, 5), Trunc(16), Output(4)}
	if got, want := acts.String(), "trunc(20),2,3,push_vlan(vid=5,pcp=0),trunc(16),4"; got != want {
		t.Errorf("String() = %s, want %s", got, want)
	}
	if got := (Actions{Count(&c)}).String(); got != "drop" {
		t.Errorf("String() of a count alone = %s, want drop", got)
	}
	r.dp.SetUpcall(static(acts, &calls))
	f := frame()
	r.ports[1].Inject(f, f)
	r.rxDone(t, 1, 2)
	if s := r.ports[2].Sent(); len(s) != 2 || !bytes.Equal(s[0], f[:20]) {
		t.Errorf("port 2: %x", s)
	}
	if s := r.ports[3].Sent(); len(s) != 2 || !bytes.Equal(s[0], f) {
		t.Errorf("port 3: %x", s)
	}
	tagged := frame(dptest.Tag{VID: 5})
	if s := r.ports[4].Sent(); len(s) != 2 || !bytes.Equal(s[0], tagged[:16]) {
		t.Errorf("port 4: %x", s)
	}
	if p, b := c.Load(); p != 2 || b != 2*uint64(len(f)) {
		t.Errorf("counter: %d packets %d bytes, want 2 and %d", p, b, 2*len(f))
	}

	// Execute (packet-out) does the same.
	if err := r.dp.Execute(f, 1, acts); err != nil {
		t.Fatal(err)
	}
	if s := r.ports[2].Sent(); len(s) != 3 || !bytes.Equal(s[2], f[:20]) {
		t.Errorf("port 2 after Execute: %x", s)
	}
	if p, _ := c.Load(); p != 3 {
		t.Errorf("counter after Execute: %d packets, want 3", p)
	}
}

// A flow whose only action is a count (a drop that is counted, as OVS's
// drop_action_congestion) counts its packets and sends nothing.
func TestCountAlone(t *testing.T) {
	r := newRig(t, 2)
	var calls atomic.Int64
	var c Counter
	r.dp.SetUpcall(static(Actions{Count(&c)}, &calls))
	f := frame()
	r.ports[1].Inject(f, f, f)
	r.rxDone(t, 1, 3)
	dptest.Eventually(t, "3 packets counted", func() bool {
		p, _ := c.Load()
		return p == 3
	})
	if n := r.ports[2].NumSent(); n != 0 {
		t.Errorf("port 2 sent %d", n)
	}
}
