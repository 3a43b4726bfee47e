package ofproto

import (
	"sync"
	"time"

	"github.com/govs/govs/datapath/flow"
)

// MAC table limits, as OVS 3.1 (lib/mac-learning.[ch]) has them.
const (
	// DefaultMACAgingTime is other_config:mac-aging-time's default, in
	// seconds (MAC_ENTRY_DEFAULT_IDLE_TIME).
	DefaultMACAgingTime = 300
	// DefaultMACTableSize is other_config:mac-table-size's default
	// (MAC_DEFAULT_MAX; 8192 in OVS 3.1, as fdb/stats-show prints).
	DefaultMACTableSize = 8192

	minMACAgingTime, maxMACAgingTime = 15, 3600
	minMACTableSize, maxMACTableSize = 10, 1000 * 1000
)

// macKey is what a MAC table entry is found by.
type macKey struct {
	mac  flow.MAC
	vlan uint16
}

// macEntry is one learned address. Times are in whole seconds of the
// bridge's clock, as OVS's time_now().
type macEntry struct {
	key  macKey
	port *mlPort
	used int64 // when last learned
	// learnedAt is the datapath clock when the entry got its port, for
	// telling a stale flow's packets from news (see learn).
	learnedAt time.Duration

	links [2]macLink // in the table's LRU list (lruList) and its port's (portList)
	// static: added by fdb/add; it never ages out, is not flushed, and
	// learning does not move it (OVS's MAC_ENTRY_AGE_STATIC_ENTRY).
	static bool
}

// An entry is in two least-recently-used-first lists: the table's and its
// port's. macList is either, by the index of the entry's links it uses.
const (
	lruList = iota
	portList
)

type macLink struct{ prev, next *macEntry }

type macList struct {
	head, tail *macEntry
	which      int // lruList or portList
}

func (l *macList) pushBack(e *macEntry) {
	lk := &e.links[l.which]
	lk.prev, lk.next = l.tail, nil
	if l.tail != nil {
		l.tail.links[l.which].next = e
	} else {
		l.head = e
	}
	l.tail = e
}

func (l *macList) unlink(e *macEntry) {
	lk := &e.links[l.which]
	if lk.prev != nil {
		lk.prev.links[l.which].next = lk.next
	} else {
		l.head = lk.next
	}
	if lk.next != nil {
		lk.next.links[l.which].prev = lk.prev
	} else {
		l.tail = lk.prev
	}
	lk.prev, lk.next = nil, nil
}

// mlPort is a port that has learned entries, by port name: it keeps the
// port's entries in LRU order for fair eviction.
type mlPort struct {
	name string
	n    int
	macList
}

// macTable is a bridge's MAC learning table (OVS's struct mac_learning):
// entries age out after idle seconds without being learned again, and
// when the table is full a new entry evicts the least recently used entry
// of the port that has the most, so that one port flooding addresses
// cannot push out the others'.
type macTable struct {
	mu sync.Mutex // guards everything below

	entries map[macKey]*macEntry
	macList // every entry, least recently used first
	ports   map[string]*mlPort

	idle int64 // seconds
	max  int

	learned, expired, evicted, moved uint64
	// statics counts the static entries.
	statics int
}

func newMACTable() *macTable {
	return &macTable{
		entries: map[macKey]*macEntry{},
		macList: macList{which: lruList},
		ports:   map[string]*mlPort{},
		idle:    DefaultMACAgingTime,
		max:     DefaultMACTableSize,
	}
}

// learn records that src was seen on port in vlan at now (bridge clock)
// and at (datapath clock). It reports whether forwarding changed (a new or
// moved entry), after which installed flows must be revalidated. As OVS
// does, an entry already on the port is refreshed at most once a second.
//
// A refresh comes from the revalidator, for a flow that forwarded packets
// since its last pass, the last at time at: it does not move an entry that
// got its port after that, since the flow's packets are older news than
// the ones that moved the entry.
func (t *macTable) learn(src flow.MAC, vlan uint16, port string, now int64, at time.Duration, refresh bool) bool {
	if src.IsMulticast() {
		return false
	}
	k := macKey{src, vlan}
	e := t.entries[k]
	if e != nil && (e.static || e.used == now && e.port.name == port) {
		return false
	}
	if refresh && e != nil && e.port.name != port && at <= e.learnedAt {
		return false
	}
	if e == nil {
		e = t.insert(k)
		t.learned++
	} else {
		t.unlink(e)
	}
	t.pushBack(e)
	e.used = now
	return t.setPort(e, port, at)
}

// insert adds an entry for k, evicting one first if the table is full.
func (t *macTable) insert(k macKey) *macEntry {
	if len(t.entries) >= t.max {
		t.evictFairly()
	}
	e := &macEntry{key: k}
	t.entries[k] = e
	return e
}

// setPort puts e on port (learned at datapath time at), reporting
// whether its port changed.
func (t *macTable) setPort(e *macEntry, port string, at time.Duration) bool {
	if e.port != nil && e.port.name == port {
		e.port.unlink(e)
		e.port.pushBack(e)
		return false
	}
	if e.port != nil {
		t.moved++
		t.detachPort(e)
	}
	e.learnedAt = at
	mp := t.ports[port]
	if mp == nil {
		mp = &mlPort{name: port, macList: macList{which: portList}}
		t.ports[port] = mp
	}
	e.port = mp
	mp.pushBack(e)
	mp.n++
	return true
}

// addStatic makes mac in vlan a static entry on port (OVS's
// mac_learning_add_static_entry), a learned entry for them becoming
// static. It returns the entry's previous port, if it was on another or
// was learned, and whether that one was static.
func (t *macTable) addStatic(mac flow.MAC, vlan uint16, port string, now int64) (prev string, wasStatic bool) {
	k := macKey{mac, vlan}
	e := t.entries[k]
	if e == nil {
		e = t.insert(k)
	} else {
		if e.port.name != port || !e.static {
			prev, wasStatic = e.port.name, e.static
		}
		t.unlink(e)
	}
	t.pushBack(e)
	e.used = now
	if !e.static {
		e.static = true
		t.statics++
	}
	if e.port != nil && e.port.name != port {
		t.detachPort(e) // not a move that learning saw
	}
	t.setPort(e, port, 0)
	return prev, wasStatic
}

// delStatic removes the static entry for mac in vlan (OVS's
// mac_learning_del_static_entry), reporting whether there was one.
func (t *macTable) delStatic(mac flow.MAC, vlan uint16) bool {
	e := t.entries[macKey{mac, vlan}]
	if e == nil || !e.static {
		return false
	}
	t.remove(e)
	return true
}

// lookup returns the port dst was learned on in vlan.
func (t *macTable) lookup(dst flow.MAC, vlan uint16) (string, bool) {
	if dst.IsMulticast() {
		return "", false
	}
	e := t.entries[macKey{dst, vlan}]
	if e == nil {
		return "", false
	}
	return e.port.name, true
}

// run expires entries idle for too long, and the oldest beyond the size
// limit, counting both as expired (OVS's mac_learning_run). It reports
// whether any went.
func (t *macTable) run(now int64) bool {
	changed := false
	for e := t.head; e != nil; {
		next := e.links[lruList].next
		switch {
		case e.static:
			// Never aged (OVS's get_lru skips them).
		case len(t.entries) > t.max || now >= e.used+t.idle:
			t.remove(e)
			t.expired++
			changed = true
		default:
			return changed // the rest were used later
		}
		e = next
	}
	return changed
}

// evictFairly removes the least recently used entry of the port with the
// most entries; among ports with as many, the one whose entry is oldest.
func (t *macTable) evictFairly() {
	var victim *mlPort
	for _, mp := range t.ports {
		if victim == nil || mp.n > victim.n || (mp.n == victim.n && mp.head.used < victim.head.used) {
			victim = mp
		}
	}
	if victim != nil {
		t.remove(victim.head)
		t.evicted++
	}
}

// flushPort removes every entry learned on port.
func (t *macTable) flushPort(port string) bool {
	mp := t.ports[port]
	if mp == nil {
		return false
	}
	for mp.head != nil {
		t.remove(mp.head)
	}
	return true
}

// flush removes every entry but the static ones (OVS's
// mac_learning_flush).
func (t *macTable) flush() bool {
	changed := false
	for e := t.head; e != nil; {
		next := e.links[lruList].next
		if !e.static {
			t.remove(e)
			changed = true
		}
		e = next
	}
	return changed
}

func (t *macTable) remove(e *macEntry) {
	t.unlink(e)
	t.detachPort(e)
	delete(t.entries, e.key)
	if e.static {
		t.statics--
	}
}

func (t *macTable) detachPort(e *macEntry) {
	mp := e.port
	mp.unlink(e)
	mp.n--
	if mp.n == 0 {
		delete(t.ports, mp.name)
	}
	e.port = nil
}

// isReservedMAC reports whether a is one of the addresses that NORMAL never
// forwards (OVS's eth_addr_is_reserved): IEEE 802.1D/802.1Q reserved
// 01:80:c2:00:00:00-0f (STP, pause, LACP, LLDP, ...), and some Extreme and
// Cisco protocol addresses.
func isReservedMAC(a flow.MAC) bool {
	switch {
	case a[0] == 0x01 && a[1] == 0x80 && a[2] == 0xc2 && a[3] == 0 && a[4] == 0 && a[5] <= 0x0f:
		return true
	case a[0] == 0x00 && a[1] == 0xe0 && a[2] == 0x2b && a[3] == 0 && a[4] == 0:
		return a[5] == 0x00 || a[5] == 0x04 || a[5] == 0x06 // EDP, EAPS
	case a[0] == 0x01 && a[1] == 0x00 && a[2] == 0x0c:
		switch [3]byte{a[3], a[4], a[5]} {
		case [3]byte{0, 0, 0}, // ISL
			[3]byte{0xcc, 0xcc, 0xcc}, // PAgP, UDLD, CDP, DTP, VTP
			[3]byte{0xcc, 0xcc, 0xcd}, // PVST+
			[3]byte{0xcd, 0xcd, 0xcd}: // STP UplinkFast, FlexLink
			return true
		}
		return a[3] == 0xcc && a[4] == 0xcc && a[5] >= 0xc0 && a[5] <= 0xc7 // Cisco CFM
	}
	return false
}
