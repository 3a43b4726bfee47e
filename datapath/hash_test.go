package datapath

import (
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/datapath/flow"
)

// A select group as OVS translates it: the first pass hashes the packet
// (hash(sym_l4(0))) and recirculates; the pass after it matches dp_hash
// under a mask, and its key carries the packet's hash, which is OVS's
// flow_hash_symmetric_l3l4. One second-pass flow per hash value serves
// every connection.
func TestHashRecirc(t *testing.T) {
	r := newRig(t, 3)
	var mu sync.Mutex
	seen := map[[2]uint16]uint32{} // connection ports -> dp_hash seen
	r.dp.SetUpcall(newProg(func(k *flow.Key) (Actions, flow.Mask) {
		m := flow.Mask{EthType: 0xffff}
		if k.RecircID == 0 {
			return Actions{Hash(HashSymL4, 0), Recirc(7)}, m
		}
		mu.Lock()
		seen[[2]uint16{k.TpSrc, k.TpDst}] = k.DpHash
		mu.Unlock()
		m.DpHash = 1
		return Actions{Output(2 + k.DpHash&1)}, m
	}))
	const conns = 40
	var frames [][]byte
	for i := range conns {
		frames = append(frames, tcpFrame(ipA, ipB, uint16(40000+i), 80, dptest.SYN, 1, 0))
	}
	r.ports[1].Inject(frames...)
	r.rxDone(t, 1, conns)
	if got := r.ports[2].NumSent() + r.ports[3].NumSent(); got != conns || r.ports[2].NumSent() == 0 || r.ports[3].NumSent() == 0 {
		t.Fatalf("%d and %d frames out of ports 2 and 3", r.ports[2].NumSent(), r.ports[3].NumSent())
	}
	for i := range conns {
		var k flow.Key
		flow.Extract(frames[i], 1, &k)
		want := flow.HashSymmetricL3L4(&k, 0, false)
		if h, ok := seen[[2]uint16{k.TpSrc, k.TpDst}]; ok && h != want {
			t.Errorf("connection %d: dp_hash %#x, want %#x", i, h, want)
		}
	}
	var lines []string
	for _, f := range r.dp.Flows() {
		lines = append(lines, flow.FormatODP(&f.Key, &f.Mask, flow.ODPFormat{})+" actions:"+f.Actions.String())
	}
	all := strings.Join(lines, "\n")
	if len(lines) != 3 || !strings.Contains(all, "recirc_id(0),in_port(1),packet_type(ns=0,id=0),eth_type(0x0800) actions:hash(sym_l4(0)),recirc(0x7)") ||
		!strings.Contains(all, "/0x1),in_port(1),packet_type(ns=0,id=0),eth_type(0x0800) actions:2") ||
		!strings.Contains(all, "/0x1),in_port(1),packet_type(ns=0,id=0),eth_type(0x0800) actions:3") {
		t.Errorf("flows:\n%s", all)
	}
}

// The hash action's algorithms are OVS's: hash(l4(basis)) is hash_int of
// the 5-tuple hash with the basis, hash(sym_l4(basis)) the symmetric
// L3/L4 hash, the same both ways; dump-flows prints them as OVS's
// format_odp_hash_action.
func TestPacketHash(t *testing.T) {
	a, b := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	key := func(src, dst netip.Addr, sport, dport uint16) flow.Key {
		var k flow.Key
		flow.Extract(dptest.Frame{Src: hostA, Dst: hostB, IPv4: &dptest.IPv4{Src: src, Dst: dst}, TCP: &dptest.TCP{Src: sport, Dst: dport}}.Bytes(), 1, &k)
		return k
	}
	k1, k2 := key(a, b, 1000, 80), key(b, a, 80, 1000)
	if PacketHash(&k1, HashSymL4, 0) != PacketHash(&k2, HashSymL4, 0) {
		t.Error("sym_l4 differs between the directions")
	}
	if PacketHash(&k1, HashL4, 0) == PacketHash(&k2, HashL4, 0) {
		t.Error("l4 is the same both ways")
	}
	if PacketHash(&k1, HashL4, 5) != flow.HashInt(flow.Hash5Tuple(&k1, 0), 5) {
		t.Error("l4 is not hash_int of the 5-tuple hash")
	}
	for _, c := range []struct {
		a    Action
		want string
	}{{Hash(HashL4, 0), "hash(l4(0))"}, {Hash(HashSymL4, 42), "hash(sym_l4(42))"}, {Hash(5, 1), "hash(Unknown hash algorithm(5))"}} {
		if got := fmt.Sprint(Actions{c.a, Recirc(1)}); got != c.want+",recirc(0x1)" {
			t.Errorf("%s, want %s", got, c.want)
		}
	}
}
