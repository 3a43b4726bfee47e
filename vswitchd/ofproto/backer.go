// Package ofproto is the OpenFlow side of each bridge (OVS's ofproto/ and
// ofproto-dpif): a bridge's ports and their VLAN configuration, its MAC
// learning table, and the translation of a datapath miss into datapath
// actions plus the mask of key fields consulted. The pipeline is the fixed
// NORMAL action for now (ofproto-dpif-xlate.c xlate_normal), or, on a
// bridge with fail_mode=secure, an empty table that drops everything;
// OpenFlow tables will call the same translation as one of their actions.
//
// A Backer (OVS's dpif_backer) is the one Upcaller of the shared datapath:
// it finds the bridge owning a miss's input port and follows patch ports
// from bridge to bridge. Configuration is published as immutable snapshots
// through atomic pointers; translations take no lock but the MAC table's.
//
// A translation's mask holds only what its decisions read, so one
// datapath megaflow serves all the traffic between two hosts. The Backer
// is also the datapath's Revalidator: a MAC learned, moved or expired
// makes the datapath translate its installed flows again soon
// (RequestRevalidation), and a reconfiguration does so before it returns
// (Revalidate). Revalidation of a flow that forwarded packets refreshes
// its source MAC as the packets would have. Trace shows a translation
// as ofproto/trace does.
package ofproto

import (
	"sync"
	"sync/atomic"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/internal/daemon"
)

// Backer dispatches the datapath's upcalls to the bridge owning the input
// port and resolves patch ports between bridges; it implements
// datapath.Upcaller.
type Backer struct {
	dp  *datapath.Datapath
	log datapath.Logger

	idx atomic.Pointer[index]

	mu      sync.Mutex // guards bridges; serializes reconfiguration and publish
	bridges map[string]*Bridge

	pinMu sync.Mutex // serializes additions to pins
	pins  pins

	meterPool meterIDs // the datapath meters of every bridge's meters
	tnlEnv    atomic.Pointer[tnlEnvBox]
	// tnlRetry: a tunnel output failed for want of a route or neighbour.
	tnlRetry atomic.Bool
	// slow receives bond members' slow protocols frames (lacp.go).
	slow    atomic.Pointer[slowHandler]
	recircs recircs

	ctMu     sync.Mutex // guards ctPol
	ctPol    ctPolicies
	ctZoneTP atomic.Pointer[map[uint16]uint32] // zone -> timeout policy ID

	// ecnDrops counts the packets of flows that drop tunnel packets
	// marked CE whose inner packet is not ECN-capable (OVS's
	// drop_action_congestion); ecnLog limits the warning about them.
	ecnDrops datapath.Counter
	ecnLog   *daemon.RateLimit
	tnlLog   datapath.Logger // module "tunnel", as OVS's ofproto/tunnel.c
	// ofLog is module "ofproto", as OVS's ofproto/ofproto.c, and ofRL
	// its rate limit.
	ofLog datapath.Logger
	ofRL  *daemon.RateLimit
}

// warnRL logs msg at WARN on l, limited by rl where l is a daemon
// module logger (a test's logger takes every message).
func warnRL(l datapath.Logger, rl *daemon.RateLimit, msg string) {
	if m, ok := l.(interface {
		WarnRL(*daemon.RateLimit, string, ...any)
	}); ok {
		m.WarnRL(rl, "%s", msg)
	} else {
		l.Warnf("%s", msg)
	}
}

// index is the immutable view translations start from: every bridge's
// current snapshot reached through its ports.
type index struct {
	// bridges are all the bridges, for Run.
	bridges []*Bridge
	// byDPPort maps datapath ports to the bridge port they belong to.
	byDPPort map[uint32]*port
	// peer maps each patch port whose peer exists (and names it back) to
	// that peer.
	peer map[*port]*port
	// byName maps interface names to ports, over all bridges.
	byName map[string]*port
	// tunnels maps tunnel vports to the tunnel ports they receive for;
	// tnlVports maps what a vport receives to it.
	tunnels   map[uint32][]*port
	tnlVports map[tnlRecv]uint32
}

func newIndex() *index {
	return &index{byDPPort: map[uint32]*port{}, peer: map[*port]*port{}, byName: map[string]*port{},
		tunnels: map[uint32][]*port{}, tnlVports: map[tnlRecv]uint32{}}
}

var _ datapath.Revalidator = (*Backer)(nil)

// NewBacker returns a Backer with no bridges and makes it dp's upcaller.
// log may be nil.
func NewBacker(dp *datapath.Datapath, log datapath.Logger) *Backer {
	if log == nil {
		log = nopLogger{}
	}
	b := &Backer{dp: dp, log: log, tnlLog: log, ofLog: log, bridges: map[string]*Bridge{}, ecnLog: daemon.NewRateLimit(1, 5),
		ofRL: daemon.NewRateLimit(1, 5)}
	if m, ok := log.(*daemon.ModuleLogger); ok {
		b.tnlLog = m.Sibling("tunnel")
		b.ofLog = m.Sibling("ofproto")
	}
	b.idx.Store(newIndex())
	dp.SetUpcall(b)
	return b
}

// AddBridge returns the bridge called name, creating it with no ports.
func (b *Backer) AddBridge(name string) *Bridge {
	b.mu.Lock()
	defer b.mu.Unlock()
	if br := b.bridges[name]; br != nil {
		return br
	}
	br := newBridge(b, name)
	b.bridges[name] = br
	return br
}

// Bridge returns the bridge called name, or nil.
func (b *Backer) Bridge(name string) *Bridge {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.bridges[name]
}

// DelBridge removes the bridge called name; when it returns no packet is
// forwarded by it: installed flows that it translated are revalidated.
func (b *Backer) DelBridge(name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	br := b.bridges[name]
	if br == nil {
		return
	}
	delete(b.bridges, name)
	b.publish()
	br.deleteMeters()
	br.ml.mu.Lock()
	br.ml.flush()
	br.ml.mu.Unlock()
	b.dp.Revalidate()
}

// publish rebuilds the index from every bridge's current snapshot.
// Interface names are global, so patch peers are found by name across
// bridges. b.mu must be held.
func (b *Backer) publish() {
	idx := newIndex()
	byName := idx.byName
	for _, br := range b.bridges {
		idx.bridges = append(idx.bridges, br)
		for _, p := range br.snap.Load().ports {
			if q := byName[p.name]; q != nil {
				b.log.Warnf("interface %s is in bridges %s and %s", p.name, q.br.br.name, br.name)
			}
			byName[p.name] = p
			if p.dpPort == 0 {
				continue
			}
			if p.tnl != nil {
				idx.indexTunnel(p)
				continue
			}
			if q := idx.byDPPort[p.dpPort]; q != nil {
				b.log.Warnf("datapath port %d is both %s and %s", p.dpPort, q.name, p.name)
			}
			idx.byDPPort[p.dpPort] = p
		}
	}
	for _, p := range byName {
		if p.patchPeer == "" {
			continue
		}
		if q := byName[p.patchPeer]; q != nil && q.patchPeer == p.name {
			idx.peer[p] = q
		}
	}
	b.idx.Store(idx)
}

// Upcall implements datapath.Upcaller: it translates each miss through the
// NORMAL pipeline of the bridge owning its input port, learning source
// MACs.
func (b *Backer) Upcall(batch []datapath.Upcall) {
	idx := b.idx.Load()
	at := b.dp.Now()
	changed := false
	for i := range batch {
		if b.translate(idx, &batch[i], modePacket, at) {
			changed = true
		}
	}
	if changed {
		b.dp.RequestRevalidation()
	}
}

// Revalidate implements datapath.Revalidator: it translates installed
// flows again; those that forwarded packets since the last pass refresh
// their source MAC's entry, as the packets would have.
func (b *Backer) Revalidate(batch []datapath.Upcall) {
	idx := b.idx.Load()
	changed := false
	for i := range batch {
		u := &batch[i]
		mode := modeCheck
		if u.Used {
			mode = modeRefresh
		}
		if b.translate(idx, u, mode, u.UsedAt) {
			changed = true
		}
	}
	if changed {
		b.dp.RequestRevalidation()
	}
}

// Run implements datapath.Revalidator: it ages out MAC entries, so that
// flows to an expired address flood again within a revalidation, and
// OpenFlow flows whose timeout passed.
func (b *Backer) Run() {
	b.recircs.sweep(ruleLive(b.idx.Load()))
	changed := b.retryTunnels()
	for _, br := range b.idx.Load().bridges {
		if br.expire() {
			changed = true
		}
		br.ml.mu.Lock()
		if br.ml.run(br.now()) {
			changed = true
		}
		br.ml.mu.Unlock()
	}
	if changed {
		b.dp.RequestRevalidation()
	}
}

type nopLogger struct{}

func (nopLogger) Debugf(string, ...any) {}
func (nopLogger) Infof(string, ...any)  {}
func (nopLogger) Warnf(string, ...any)  {}
func (nopLogger) Errorf(string, ...any) {}
