package ofproto

import (
	"math/rand"
	"runtime"
	"strings"
	"testing"

	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// randMatch is a normalized match on a few of a flow's fields, tun_metadata
// bytes among them.
func randMatch(rng *rand.Rand) ofp.Match {
	var m ofp.Match
	if rng.Intn(2) == 0 {
		m.Mask.InPort, m.Flow.InPort = ^uint32(0), uint32(rng.Intn(3))
	}
	if rng.Intn(2) == 0 {
		m.Mask.EthType, m.Flow.EthType = 0xffff, 0x0800
	}
	if rng.Intn(2) == 0 {
		m.Mask.IPv4Dst, m.Flow.IPv4Dst = [4]byte{255, 255, 255, byte(rng.Intn(2)) * 255}, [4]byte{10, 0, 0, byte(rng.Intn(3))}
	}
	if rng.Intn(2) == 0 {
		m.Mask.Regs[5], m.Flow.Regs[5] = uint32(rng.Intn(4)), uint32(rng.Intn(4))
	}
	if rng.Intn(4) == 0 {
		m.Mask.TunMD[100], m.Flow.TunMD[100] = 0xf0, byte(rng.Intn(256))
		m.Mask.TunMDPresent, m.Flow.TunMDPresent = 1<<3, 1<<3
	}
	m.Normalize()
	return m
}

// TestRuleMatch checks a rule's compact match against the ofp.Match it
// was made from: rebuilt whole, and compared strictly, loosely and for
// overlap as the Match itself compares.
func TestRuleMatch(t *testing.T) {
	rng := rand.New(rand.NewSource(12))
	for range 2000 {
		m, o := randMatch(rng), randMatch(rng)
		r := &rule{priority: 1}
		r.setMatch(&m)
		if got := r.match(); got.Flow != m.Flow || got.Mask != m.Mask {
			t.Fatalf("match rebuilt as %+v, want %+v", got, m)
		}
		if !r.sameMatch(&m, 1) || r.sameMatch(&m, 2) {
			t.Fatalf("%+v: not the same match as itself", m)
		}
		if got, want := r.sameMatch(&o, 1), o.Flow == m.Flow && o.Mask == m.Mask; got != want {
			t.Fatalf("sameMatch(%+v, %+v) = %v, want %v", m, o, got, want)
		}
		if got, want := r.narrower(&o), o.Includes(&m); got != want {
			t.Fatalf("narrower(%+v, %+v) = %v, want %v", m, o, got, want)
		}
		common := m.Mask.Masked(&o.Mask)
		if got, want := r.overlaps(&o, 1), m.Flow.Masked(&common) == o.Flow.Masked(&common); got != want {
			t.Fatalf("overlaps(%+v, %+v) = %v, want %v", m, o, got, want)
		}
		if r.ethType() != m.Flow.EthType || r.inPort() != m.Flow.InPort {
			t.Fatalf("ethType, inPort %#x, %d, want %#x, %d", r.ethType(), r.inPort(), m.Flow.EthType, m.Flow.InPort)
		}
		ro := &rule{}
		ro.setMatch(&o)
		if (ro.mask == r.mask) != (o.Mask == m.Mask) {
			t.Fatalf("masks %+v and %+v: shared %v", m.Mask, o.Mask, ro.mask == r.mask)
		}
	}
}

// TestInternMaskGoes checks that a mask no rule holds any more leaves
// the intern table once the GC took it.
func TestInternMaskGoes(t *testing.T) {
	var m ofp.Flow
	m.Regs[15] = 0x12345
	rm := internMask(&m)
	if findMask(&m) != rm || internMask(&m) != rm {
		t.Fatal("an interned mask is not found again")
	}
	rm = nil
	for i := 0; ; i++ {
		runtime.GC()
		masks.RLock()
		_, ok := masks.m[m]
		masks.RUnlock()
		if !ok {
			break
		}
		if i == 1000 {
			t.Fatal("the mask stays interned")
		}
		runtime.Gosched()
	}
}

// TestInternActions checks that equal action lists are shared and
// others not.
func TestInternActions(t *testing.T) {
	a := internActions([]ofp.Action{output(1), output(2)})
	b := internActions([]ofp.Action{output(1), output(2)})
	c := internActions([]ofp.Action{output(1), output(3)})
	if &a[0] != &b[0] || len(b) != 2 {
		t.Error("equal lists not shared")
	}
	if &a[0] == &c[0] || c[1].Port != 3 {
		t.Error("different lists shared")
	}
	learn := []ofp.Action{{Type: ofp.ActLearn, Learn: &ofp.Learn{}}}
	if l := internActions(learn); &l[0] != &learn[0] {
		t.Error("a list with learn's arguments interned")
	}
	if internActions(nil) != nil {
		t.Error("no actions interned as some")
	}
}

// TestBundledTunMetadata checks a bundled add whose match has
// tun_metadata fields: placed through the TLV map as it is at commit,
// refused if the field is unmapped then, and reported with them.
func TestBundledTunMetadata(t *testing.T) {
	tb := newTestBacker(t)
	br := tb.bridge("br0", BridgeConfig{Ports: []PortConfig{trunk("p1", 1), trunk("p2", 2)}})
	add := func() ofp.Message {
		fm := fmSpec{prio: 10, match: map[ofp.FieldID][2]uint64{ofp.FieldInPort: {1, 0}}, actions: []ofp.Action{output(2)}}.mod()
		fm.Match.TunMD = []ofp.TunMDEntry{{Idx: 0, Value: []byte{0x0a, 0x00, 0x01}}}
		kept, err := br.CheckBundled(fm)
		if err != nil {
			t.Fatal(err)
		}
		return kept
	}
	early := add()
	if _, err := br.CommitBundle([]ofp.Message{early}); err == nil || err.Errno != ofp.InvalidTLVField {
		t.Fatalf("commit with tun_metadata0 unmapped: %v", err)
	}
	late := add()
	if err := br.TLVTableMod(&ofp.TLVTableMod{Command: ofp.TLVAdd, Maps: []ofp.TLVMap{{Class: 0x102, Type: 0x80, Len: 4, Index: 0}}}); err != nil {
		t.Fatal(err)
	}
	if i, err := br.CommitBundle([]ofp.Message{late}); err != nil {
		t.Fatal(i, err)
	}
	if got := flowsOf(br); !strings.Contains(got, "tun_metadata0=0xa0001") {
		t.Errorf("flows %q, want one with tun_metadata0=0xa0001", got)
	}
}
