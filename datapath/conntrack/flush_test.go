package conntrack

import "testing"

// TestFlushMatch: a partial tuple flushes the connections it matches, in
// one zone or in all; the reply direction is matched too.
func TestFlushMatch(t *testing.T) {
	tr, clk := newTracker(t)
	a, b := "10.0.0.1", "10.0.0.2"
	replay(t, tr, clk, []step{
		{"udp zone 5", udp4(a, b, 1000, 53), Action{Commit: true, Zone: 5}, trk | nw, 0},
		{"udp zone 0", udp4(a, b, 1001, 53), Action{Commit: true}, trk | nw, 0},
		{"tcp zone 0", tcp4(a, b, 40000, 80, syn, 1, 0, ""), Action{Commit: true}, trk | nw, 0},
	})
	udp := TupleMatch{Tuple: Tuple{Proto: 17}, Has: MatchProto}
	if n := tr.FlushMatch(0, udp, TupleMatch{}); n != 1 || tr.NConns() != 2 {
		t.Errorf("udp of zone 0: flushed %d, %d left; want 1, 2", n, tr.NConns())
	}
	reply := TupleMatch{Tuple: Tuple{SrcPort: 53, Proto: 17}, Has: MatchSrcPort | MatchProto}
	if n := tr.FlushMatch(-1, TupleMatch{}, reply); n != 1 || tr.NConns() != 1 {
		t.Errorf("udp replies from 53, any zone: flushed %d, %d left; want 1, 1", n, tr.NConns())
	}
	if n := tr.FlushMatch(-1, TupleMatch{Tuple: Tuple{V6: true}, Has: MatchSrc}, TupleMatch{}); n != 0 {
		t.Errorf("an IPv6 source flushed %d IPv4 connections", n)
	}
}
