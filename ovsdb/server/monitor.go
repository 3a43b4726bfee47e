package server

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/govs/govs/ovsdb/db"
	"github.com/govs/govs/ovsdb/jsonrpc"
)

// Monitor protocol versions: "monitor" sends update, "monitor_cond" update2,
// "monitor_cond_since" update3.
const (
	monitorV1 = 1
	monitorV2 = 2
	monitorV3 = 3
)

var updateMethod = [...]string{monitorV1: "update", monitorV2: "update2", monitorV3: "update3"}

// monitor is one client monitor. Commits add row changes to pending, under
// the database's lock; the session turns pending into one notification when
// its connection has drained or before its next reply, so a slow client's
// updates merge instead of queueing up (ovsdb/monitor.c keeps change sets
// for the same reason).
type monitor struct {
	ss      *session
	e       *dbEntry
	id      json.RawMessage // guarded by ss.mu (monitor_cond_change renames)
	version int
	tables  map[string]*monTable // guarded by ss.mu; conditions change
	// shareKey is equal for monitors that compose equal updates from
	// equal changes (same version and monitor-requests); "" after
	// monitor_cond_change, whose conditions it no longer describes.
	// Guarded by ss.mu.
	shareKey string

	mu      sync.Mutex                     // guards the fields below
	pending map[string]map[db.UUID]*change // changes not yet sent
	spare   map[string]map[db.UUID]*change // empty, for pending's next swap
	lastTxn db.UUID                        // the latest commit in pending
	commits int                            // commits merged into pending
	shared  *updateCache                   // the commit's cache, if commits == 1
	// one is the only commit with changes for the monitor since the last
	// take, kept as it is (pending is then empty): with the commit's
	// shared update usually composed by another monitor of the same
	// kind, a commit seen by N monitors costs no per-monitor copy of its
	// changes. A second commit merges it into pending.
	one   *db.Commit
	ready bool // the reply with initial contents is queued
}

// change is a row's state before the first and after the last of the
// commits it accumulates; nil for "did not exist".
type change struct{ old, new *db.Row }

type monTable struct {
	t       *db.Table
	cols    []*db.Column
	colSel  []byte // each column's request's select bits (selInitial...)
	initial bool
	insert  bool
	delete  bool
	modify  bool
	// conds is nil for "every row" (monitor, or no "where"); a row matches
	// when any clause holds. Conditions are immutable and replaced whole
	// by monitor_cond_change.
	conds []db.Condition
}

func (mt *monTable) match(r *db.Row) bool {
	return r != nil && (mt.conds == nil || db.MatchAny(mt.conds, r))
}

// updateCache holds, for one commit, the update each kind of monitor
// (shareKey, and monitor id for the whole message) sends for that commit
// alone, so that N monitors with equal parameters compose and encode it
// once instead of N times (ovsdb/monitor.c shares json_cache the same way).
type updateCache struct {
	mu sync.Mutex
	// by shareKey: the table-updates (nil: nothing visible), and by
	// monitor id the whole notification.
	m map[string]*sharedUpdate
}

type sharedUpdate struct {
	body  []byte
	built bool
	msgs  map[string]sharedMsg // by monitor id
}

type sharedMsg struct {
	msg *jsonrpc.Message
	b   []byte
}

// get returns the notification for a monitor of kind key and id, making
// the table-updates with compose and the notification with notify on the
// first call for each (outside the lock; a race makes them twice and
// keeps the first). They are shared: nobody may modify them. A nil
// message means nothing is visible to such monitors.
func (uc *updateCache) get(key string, id []byte, compose func() []byte, notify func([]byte) *jsonrpc.Message) (*jsonrpc.Message, []byte) {
	uc.mu.Lock()
	su := uc.m[key]
	if su != nil && su.built {
		if su.body == nil {
			uc.mu.Unlock()
			return nil, nil
		}
		if sm, ok := su.msgs[string(id)]; ok {
			uc.mu.Unlock()
			return sm.msg, sm.b
		}
	}
	uc.mu.Unlock()
	var body []byte
	if su != nil && su.built {
		body = su.body
	} else {
		body = compose()
	}
	var sm sharedMsg
	if body != nil {
		sm.msg = notify(body)
		sm.b = sm.msg.Append(nil)
	}
	uc.mu.Lock()
	defer uc.mu.Unlock()
	if uc.m == nil {
		uc.m = map[string]*sharedUpdate{}
	}
	su = uc.m[key]
	if su == nil {
		su = &sharedUpdate{}
		uc.m[key] = su
	}
	if !su.built {
		su.body, su.built = body, true
	}
	if su.body == nil {
		return nil, nil
	}
	if old, ok := su.msgs[string(id)]; ok {
		return old.msg, old.b
	}
	if sm.msg == nil || !bytes.Equal(body, su.body) {
		// Another goroutine's equal body won: notify with it.
		sm.msg = notify(su.body)
		sm.b = sm.msg.Append(nil)
	}
	if su.msgs == nil {
		su.msgs = map[string]sharedMsg{}
	}
	su.msgs[string(id)] = sm
	return sm.msg, sm.b
}

// addCommit merges a commit into pending; uc is the commit's shared cache.
// It reports whether the monitor has something new to send. Called under
// the database lock.
func (m *monitor) addCommit(c *db.Commit, uc *updateCache) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lastTxn = c.TxnID
	if !m.sees(c) {
		return false
	}
	if m.commits == 0 && len(m.pending) == 0 {
		m.one = c
	} else {
		if m.one != nil {
			m.mergeLocked(m.one)
			m.one = nil
		}
		m.mergeLocked(c)
	}
	m.commits++
	m.shared = uc
	return true
}

// sees reports whether c changes a table the monitor watches.
func (m *monitor) sees(c *db.Commit) bool {
	for tname, rows := range c.Tables {
		if m.tables[tname] != nil && len(rows) > 0 {
			return true
		}
	}
	return false
}

// mergeLocked merges c's changes of the watched tables into pending.
// Called with m.mu held.
func (m *monitor) mergeLocked(c *db.Commit) { m.mergeInto(m.pending, c) }

// changesOf returns c's changes of the watched tables as pending holds
// them.
func (m *monitor) changesOf(c *db.Commit) map[string]map[db.UUID]*change {
	out := map[string]map[db.UUID]*change{}
	m.mergeInto(out, c)
	return out
}

// mergeInto merges c's changes of the watched tables into changes, after
// those it holds.
func (m *monitor) mergeInto(changes map[string]map[db.UUID]*change, c *db.Commit) {
	for tname, rows := range c.Tables {
		if m.tables[tname] == nil {
			continue
		}
		p := changes[tname]
		if p == nil {
			p = make(map[db.UUID]*change, len(rows))
			changes[tname] = p
		}
		for u, rc := range rows {
			if ch := p[u]; ch != nil {
				ch.new = rc.New
				if ch.old == nil && ch.new == nil {
					delete(p, u)
				}
			} else {
				p[u] = &change{old: rc.Old, new: rc.New}
			}
		}
	}
}

// takeUpdate returns a notification for the pending changes and its
// encoding, or nil. When the changes are one commit's, the encoding is
// shared with every monitor of the same kind. Called with ss.mu held.
func (m *monitor) takeUpdate() (*jsonrpc.Message, []byte) {
	for {
		fails := m.e.failures.Load()
		m.mu.Lock()
		if !m.ready || len(m.pending) == 0 && m.one == nil {
			m.mu.Unlock()
			return nil, nil
		}
		one, last := m.one, m.lastTxn
		uc := m.shared
		if m.commits != 1 || m.shareKey == "" {
			uc = nil
		}
		var pending map[string]map[db.UUID]*change
		if one == nil {
			pending = m.pending
			m.pending, m.spare = m.spare, nil
			if m.pending == nil {
				m.pending = map[string]map[db.UUID]*change{}
			}
		}
		m.one, m.commits, m.shared = nil, 0, nil
		m.mu.Unlock()
		// Their commits are written first. If a failed write undid
		// some, the changes go back, to be sent merged with the undoing
		// commit's.
		m.e.flushLog()
		if m.e.failures.Load() != fails {
			if one != nil {
				pending = m.changesOf(one)
			}
			m.putBack(pending)
			continue
		}
		if one != nil {
			// Only a monitor that composes the update copies the
			// commit's changes.
			return m.encodeWith(func() []byte { return m.compose(m.changesOf(one), false) }, last, uc)
		}
		return m.encode(pending, last, uc)
	}
}

// putBack merges changes taken from pending back in, before the changes
// pending now.
func (m *monitor) putBack(taken map[string]map[db.UUID]*change) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.one != nil { // a commit since the take
		m.mergeLocked(m.one)
		m.one = nil
	}
	for tname, rows := range m.pending {
		t := taken[tname]
		if t == nil {
			taken[tname] = rows
			continue
		}
		for u, ch := range rows {
			if tc := t[u]; tc != nil {
				tc.new = ch.new
			} else {
				t[u] = ch
			}
		}
	}
	for _, rows := range taken {
		for u, ch := range rows {
			if ch.old == ch.new { // nil and nil too: inserted and undone
				delete(rows, u)
			}
		}
	}
	m.pending = taken
	m.commits, m.shared = 2, nil // several commits' changes: composed alone
}

// encode composes the taken changes; the map is empty again for a later
// take once it is used.
func (m *monitor) encode(pending map[string]map[db.UUID]*change, last db.UUID, uc *updateCache) (*jsonrpc.Message, []byte) {
	defer func() {
		clear(pending)
		m.mu.Lock()
		m.spare = pending
		m.mu.Unlock()
	}()
	return m.encodeWith(func() []byte { return m.compose(pending, false) }, last, uc)
}

// encodeWith returns the notification of the update compose makes, or
// the one uc holds for monitors of the same kind.
func (m *monitor) encodeWith(compose func() []byte, last db.UUID, uc *updateCache) (*jsonrpc.Message, []byte) {
	if uc == nil {
		body := compose()
		if body == nil {
			return nil, nil
		}
		msg := m.notification(body, last)
		return msg, msg.Append(nil)
	}
	return uc.get(m.shareKey, m.id, compose, func(body []byte) *jsonrpc.Message { return m.notification(body, last) })
}

func (m *monitor) notification(body []byte, last db.UUID) *jsonrpc.Message {
	var p []byte
	p = append(p, '[')
	p = append(p, m.id...)
	if m.version == monitorV3 {
		p = append(p, `,"`...)
		p = last.Append(p)
		p = append(p, '"')
	}
	p = append(p, ',')
	p = append(p, body...)
	p = append(p, ']')
	return &jsonrpc.Message{Method: updateMethod[m.version], Params: p}
}

// compose encodes changes as table-updates (v1) or table-updates2, or
// returns nil if no change is visible to the monitor.
func (m *monitor) compose(changes map[string]map[db.UUID]*change, initial bool) []byte {
	w := newTableUpdates()
	defer w.release()
	for _, tn := range slices.Sorted(maps.Keys(changes)) {
		mt := m.tables[tn]
		if mt == nil {
			continue
		}
		rows := changes[tn]
		for _, u := range sortedUUIDs(rows) {
			ch := rows[u]
			w.row(tn, u)
			var ok bool
			if m.version == monitorV1 {
				w.b, ok = mt.rowUpdate1(w.b, ch.old, ch.new, initial)
			} else {
				w.b, ok = mt.rowUpdate2(w.b, ch.old, ch.new, initial)
			}
			if !ok {
				w.drop()
			}
		}
		w.endTable()
	}
	return w.result()
}

// rowRef is a row of a table's initial contents.
type rowRef struct {
	u db.UUID
	r *db.Row
}

// takeInitial copies the rows of the monitored tables that the monitor's
// initial contents may show. Called under the database lock.
func (m *monitor) takeInitial(snap db.Snapshot) map[string][]rowRef {
	out := make(map[string][]rowRef, len(m.tables))
	for tn, mt := range m.tables {
		if !mt.initial {
			continue
		}
		rows := snap.Rows(tn)
		refs := make([]rowRef, 0, len(rows))
		for u, r := range rows {
			refs = append(refs, rowRef{u, r})
		}
		out[tn] = refs
	}
	return out
}

// composeInitial is compose for initial contents (taken by takeInitial):
// rows are never changes, so it needs no change per row.
func (m *monitor) composeInitial(rows map[string][]rowRef) []byte {
	w := newTableUpdates()
	defer w.release()
	for _, tn := range slices.Sorted(maps.Keys(rows)) {
		mt := m.tables[tn]
		refs := rows[tn]
		slices.SortFunc(refs, func(a, b rowRef) int { return compareUUIDs(a.u, b.u) })
		for _, x := range refs {
			w.row(tn, x.u)
			var ok bool
			if m.version == monitorV1 {
				w.b, ok = mt.rowUpdate1(w.b, nil, x.r, true)
			} else {
				w.b, ok = mt.rowUpdate2(w.b, nil, x.r, true)
			}
			if !ok {
				w.drop()
			}
		}
		w.endTable()
	}
	return w.result()
}

// newTableUpdates starts a tableUpdates in a pooled scratch buffer; the
// caller releases it once it has the result.
func newTableUpdates() *tableUpdates {
	sp := composeBufs.Get().(*[]byte)
	return &tableUpdates{b: (*sp)[:0], scratch: sp}
}

// result returns an exact-size copy of the object, or nil if it has no row.
func (w *tableUpdates) result() []byte {
	if b := w.bytes(); b != nil {
		return slices.Clone(b)
	}
	return nil
}

// release gives the scratch buffer back to the pool.
func (w *tableUpdates) release() {
	if cap(w.b) <= maxPooledCompose {
		*w.scratch = w.b[:0]
		composeBufs.Put(w.scratch)
	}
	w.b, w.scratch = nil, nil
}

// composeBufs are compose's scratch buffers: it builds there and returns an
// exact-size copy, instead of growing a new buffer by doubling each time.
var composeBufs = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledCompose is the largest scratch buffer kept for reuse; a larger
// one (a big database's initial contents) goes back to the garbage
// collector.
const maxPooledCompose = 1 << 20

// tableUpdates builds a table-updates (or table-updates2) object row by
// row, tables and rows in order: row opens the table's object as needed.
type tableUpdates struct {
	b       []byte
	scratch *[]byte // b's pooled buffer, if newTableUpdates made it
	tables  int     // tables written, closed
	rows    int     // rows of the open table
	mark    int     // where the last row started
}

// row starts the row-update of row u of table tn, for the caller to append
// to b, or to take back with drop.
func (w *tableUpdates) row(tn string, u db.UUID) {
	w.mark = len(w.b)
	if w.rows == 0 {
		if w.tables == 0 {
			w.b = append(w.b, '{')
		} else {
			w.b = append(w.b, ',')
		}
		w.b = appendJSONString(w.b, tn)
		w.b = append(w.b, ":{"...)
	} else {
		w.b = append(w.b, ',')
	}
	w.b = append(w.b, '"')
	w.b = u.Append(w.b)
	w.b = append(w.b, `":`...)
	w.rows++
}

// drop takes back the row row started.
func (w *tableUpdates) drop() {
	w.b = w.b[:w.mark]
	w.rows--
}

// endTable closes the current table's object, if it has rows.
func (w *tableUpdates) endTable() {
	if w.rows > 0 {
		w.b = append(w.b, '}')
		w.tables++
		w.rows = 0
	}
}

// bytes returns the object, or nil if it has no row.
func (w *tableUpdates) bytes() []byte {
	if w.tables == 0 {
		return nil
	}
	return append(w.b, '}')
}

// sortedUUIDs returns the keys of rows in byte order, the order in which
// updates list rows.
func sortedUUIDs[T any](rows map[db.UUID]T) []db.UUID {
	uuids := make([]db.UUID, 0, len(rows))
	for u := range rows {
		uuids = append(uuids, u)
	}
	slices.SortFunc(uuids, compareUUIDs)
	return uuids
}

// compareUUIDs orders uuids by their bytes, as bytes.Compare would.
func compareUUIDs(a, b db.UUID) int {
	if c := cmp.Compare(binary.BigEndian.Uint64(a[:8]), binary.BigEndian.Uint64(b[:8])); c != 0 {
		return c
	}
	return cmp.Compare(binary.BigEndian.Uint64(a[8:]), binary.BigEndian.Uint64(b[8:]))
}

// appendJSONString appends a table or column name, an identifier, which
// needs no escaping that json.Marshal and OVS would do differently.
func appendJSONString(b []byte, s string) []byte { return db.AppendJSONString(b, s) }

func appendColumns(b []byte, r *db.Row, cols []*db.Column, keep func(*db.Column) bool) []byte {
	b = append(b, '{')
	n := 0
	for _, c := range cols {
		if keep != nil && !keep(c) {
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = appendJSONString(b, c.Name)
		b = append(b, ':')
		b = db.AppendDatumJSON(b, r.Get(c), c.Type.IsMap())
	}
	return append(b, '}')
}

func changed(c *db.Column, old, new *db.Row) bool {
	return !old.Get(c).Equal(new.Get(c))
}

// rowUpdate1 appends a <row-update> of RFC 7047: "new" with every selected
// column, "old" with all columns for a delete and only the changed ones for
// a modification.
func (mt *monTable) rowUpdate1(b []byte, old, new *db.Row, initial bool) ([]byte, bool) {
	switch {
	case old == nil && new == nil:
		return b, false
	case old == nil:
		if initial && !mt.initial || !initial && !mt.insert {
			return b, false
		}
		b = append(b, `{"new":`...)
		b = appendColumns(b, new, mt.cols, nil)
	case new == nil:
		if !mt.delete {
			return b, false
		}
		b = append(b, `{"old":`...)
		b = appendColumns(b, old, mt.cols, nil)
	default:
		if !mt.modify {
			return b, false
		}
		any := false
		for _, c := range mt.cols {
			if changed(c, old, new) {
				any = true
				break
			}
		}
		if !any {
			return b, false
		}
		b = append(b, `{"old":`...)
		b = appendColumns(b, old, mt.cols, func(c *db.Column) bool { return changed(c, old, new) })
		b = append(b, `,"new":`...)
		b = appendColumns(b, new, mt.cols, nil)
	}
	return append(b, '}'), true
}

func isDefault(c *db.Column, r *db.Row) bool {
	return c.Index >= 0 && db.IsDefault(&c.Type, r.Cols[c.Index])
}

// diff is a column's update2 "modify" value.
func diff(c *db.Column, old, new *db.Row) db.Datum {
	return db.Diff(&c.Type, old.Get(c), new.Get(c))
}

// rowUpdate2 appends a <row-update2>: "initial"/"insert" with the selected
// columns that are not at their defaults, "delete": null, or "modify" with
// the diffs of the changed columns. Conditions turn a row entering the
// monitored set into an insert and one leaving it into a delete.
func (mt *monTable) rowUpdate2(b []byte, old, new *db.Row, initial bool) ([]byte, bool) {
	oldIn, newIn := mt.match(old), mt.match(new)
	switch {
	case !oldIn && !newIn:
		return b, false
	case !oldIn:
		if initial && !mt.initial || !initial && !mt.insert {
			return b, false
		}
		if initial {
			b = append(b, `{"initial":`...)
		} else {
			b = append(b, `{"insert":`...)
		}
		b = appendColumns(b, new, mt.cols, func(c *db.Column) bool { return !isDefault(c, new) })
	case !newIn:
		if !mt.delete {
			return b, false
		}
		b = append(b, `{"delete":null`...)
	default:
		if !mt.modify {
			return b, false
		}
		b = append(b, `{"modify":{`...)
		n := 0
		for _, c := range mt.cols {
			if !changed(c, old, new) {
				continue
			}
			if n > 0 {
				b = append(b, ',')
			}
			n++
			b = appendJSONString(b, c.Name)
			b = append(b, ':')
			b = db.AppendDatumJSON(b, diff(c, old, new), c.Type.IsMap())
		}
		if n == 0 {
			return b, false
		}
		b = append(b, '}')
	}
	return append(b, '}'), true
}

// parseMonitorRequests parses <monitor-requests>: per table, one request
// object or (monitor_cond and later, and in practice any version) an array
// of them, with ovsdb-server's checks and error texts.
func parseMonitorRequests(e *dbEntry, raw json.RawMessage, version int) (map[string]*monTable, *ovsdbError) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, syntaxErr(raw, "monitor-requests must be object")
	}
	// The request is valid JSON (the decoder checked the message), so it
	// is split where it lies rather than unmarshalled: encoding/json's
	// maps of copies were a tenth of an ovn-nbctl call's CPU.
	reqs := map[string]json.RawMessage{}
	jsonrpc.SplitObject(raw, func(k, v []byte) { reqs[unquoteJSON(k)] = v })
	sch := e.d.Schema()
	tables := map[string]*monTable{}
	names := make([]string, 0, len(reqs))
	for n := range reqs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, tn := range names {
		t := sch.Tables[tn]
		if t == nil {
			return nil, &ovsdbError{Name: "syntax error", Details: "no table named " + tn}
		}
		mt := &monTable{t: t}
		v := reqs[tn]
		var list []json.RawMessage
		if len(v) > 0 && v[0] == '[' {
			list, _ = jsonrpc.SplitArray(v)
		} else {
			list = []json.RawMessage{v}
		}
		seen := map[*db.Column]bool{}
		for _, r := range list {
			if err := mt.parseRequest(r, version, seen); err != nil {
				return nil, err
			}
		}
		if len(list) == 0 {
			// An empty array selects nothing at all, as in OVS.
			mt.initial, mt.insert, mt.delete, mt.modify = false, false, false, false
		}
		tables[tn] = mt
	}
	return tables, nil
}

// selectBits packs a monitor request's select flags.
func selectBits(initial, insert, del, modify bool) byte {
	var b byte
	for i, f := range []bool{initial, insert, del, modify} {
		if f {
			b |= 1 << i
		}
	}
	return b
}

// dbmonKey is equal for monitors that ovsdb-server would serve from one
// struct ovsdb_monitor (ovsdb_monitor_equal: the same tables, table selects
// and columns with their selects; neither the update version nor the
// conditions count): memory/show's "monitors" counts the distinct keys.
// It reads only what monitor_cond_change leaves alone, so memory/show
// renders it when asked instead of every monitor request.
//
// It renders what ovsdb_monitor_equal compares: per table (sorted),
// its select and its columns, sorted, each with its select.
func dbmonKey(tables map[string]*monTable) string {
	var b strings.Builder
	for _, n := range slices.Sorted(maps.Keys(tables)) {
		mt := tables[n]
		fmt.Fprintf(&b, "%s/%d:", n, selectBits(mt.initial, mt.insert, mt.delete, mt.modify))
		cols := make([]string, len(mt.cols))
		for i, c := range mt.cols {
			cols[i] = fmt.Sprintf("%s/%d", c.Name, mt.colSel[i])
		}
		sort.Strings(cols)
		b.WriteString(strings.Join(cols, ","))
		b.WriteByte(';')
	}
	return b.String()
}

// parseRequest parses one <monitor-request> into mt.
func (mt *monTable) parseRequest(raw json.RawMessage, version int, seen map[*db.Column]bool) *ovsdbError {
	t := mt.t
	if len(raw) == 0 || raw[0] != '{' {
		return syntaxErr(raw, "Parsing table %s failed: Object expected.", t.Name)
	}
	members := map[string]json.RawMessage{}
	jsonrpc.SplitObject(raw, func(k, v []byte) { members[unquoteJSON(k)] = v })
	allowed := map[string]byte{"columns": '[', "select": '{'}
	if version >= monitorV2 {
		allowed["where"] = '['
	}
	keys := make([]string, 0, len(members))
	for k := range members {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		want, ok := allowed[k]
		if !ok {
			return syntaxErr(raw, "Parsing table %s failed: Member '%s' is present but not allowed here.", t.Name, k)
		}
		if v := members[k]; len(v) == 0 || v[0] != want {
			return syntaxErr(raw, "Parsing table %s failed: Type mismatch for member '%s'.", t.Name, k)
		}
	}
	initial, insert, del, modify := true, true, true, true
	if sel, ok := members["select"]; ok {
		flags := map[string]json.RawMessage{}
		jsonrpc.SplitObject(sel, func(k, v []byte) { flags[unquoteJSON(k)] = v })
		for k, v := range flags {
			p := map[string]*bool{"initial": &initial, "insert": &insert, "delete": &del, "modify": &modify}[k]
			if p == nil {
				return syntaxErr(sel, "Parsing table %s select failed: Member '%s' is present but not allowed here.", t.Name, k)
			}
			switch string(v) {
			case "true":
				*p = true
			case "false":
				*p = false
			default:
				return syntaxErr(sel, "Parsing table %s select failed: Type mismatch for member '%s'.", t.Name, k)
			}
		}
	}
	mt.initial = mt.initial || initial
	mt.insert = mt.insert || insert
	mt.delete = mt.delete || del
	mt.modify = mt.modify || modify
	sel := selectBits(initial, insert, del, modify)

	if cols, ok := members["columns"]; ok {
		names, _ := jsonrpc.SplitArray(cols)
		for _, nr := range names {
			if len(nr) == 0 || nr[0] != '"' {
				return syntaxErr(cols, "array of column names expected")
			}
			n := unquoteJSON(nr)
			c := t.Column(n)
			if c == nil {
				return syntaxErr(cols, "%s is not a valid column name", n)
			}
			if seen[c] {
				return syntaxErr(cols, "column %s mentioned more than once", n)
			}
			seen[c] = true
			mt.cols = append(mt.cols, c)
			mt.colSel = append(mt.colSel, sel)
		}
	} else {
		for _, c := range t.Columns {
			if seen[c] {
				return syntaxErr(nil, "column %s mentioned more than once", c.Name)
			}
			seen[c] = true
			mt.cols = append(mt.cols, c)
			mt.colSel = append(mt.colSel, sel)
		}
		if v := t.Column("_version"); v != nil && !seen[v] {
			seen[v] = true
			mt.cols = append(mt.cols, v)
			mt.colSel = append(mt.colSel, sel)
		}
	}
	if where, ok := members["where"]; ok {
		conds, err := parseWhere(t, where)
		if err != nil {
			return err
		}
		mt.conds = conds
	}
	return nil
}

var closeBracket = []byte("]")

// unquoteJSON returns the string of b, a valid JSON string.
func unquoteJSON(b []byte) string {
	if len(b) >= 2 && bytes.IndexByte(b, '\\') < 0 {
		return string(b[1 : len(b)-1])
	}
	var s string
	json.Unmarshal(b, &s)
	return s
}

// parseWhere parses a monitor condition, a list of clauses of which any
// may hold; [] matches every row, as in ovsdb-server.
func parseWhere(t *db.Table, raw json.RawMessage) ([]db.Condition, *ovsdbError) {
	conds, err := db.ParseConditions(t, raw, nil)
	if err != nil {
		return nil, &ovsdbError{Name: err.Name, Details: err.Details, Syntax: err.SyntaxJSON()}
	}
	return conds, nil
}

// monitor handles monitor, monitor_cond and monitor_cond_since.
func (ss *session) monitor(m *jsonrpc.Message, e *dbEntry, params []json.RawMessage) {
	version := monitorV1
	nparams := 3
	switch m.Method {
	case "monitor_cond":
		version = monitorV2
	case "monitor_cond_since":
		version, nparams = monitorV3, 4
	}
	if len(params) != nparams {
		ss.replyError(m, syntaxErr(m.Params, "invalid parameters"))
		return
	}
	var since db.UUID
	if version == monitorV3 {
		var s string
		if json.Unmarshal(params[3], &s) != nil {
			ss.replyError(m, syntaxErr(m.Params, "invalid parameters"))
			return
		}
		if u, err := db.ParseUUID(s); err == nil {
			since = u
		}
	}
	tables, perr := parseMonitorRequests(e, params[2], version)
	if perr != nil {
		ss.replyError(m, perr)
		return
	}
	id := json.RawMessage(compactJSON(params[1]))
	key := string(id)

	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.monitors[key] != nil {
		ss.flushLocked()
		ss.conn.Send(jsonrpc.NewError(m.ID, syntaxErr(params[1], "duplicate monitor ID")))
		return
	}
	if ss.closed {
		return
	}
	mon := &monitor{ss: ss, e: e, id: id, version: version, tables: tables,
		shareKey: fmt.Sprintf("%d %s", version, compactJSON(params[2])),
		pending:  map[string]map[db.UUID]*change{}}

	// Take the initial contents (or what the client missed) and start
	// receiving commits atomically.
	var contents map[string]map[db.UUID]*change
	var initial map[string][]rowRef
	var last db.UUID
	var gen uint64
	var body []byte // the initial contents, cached
	found := false
	e.d.Read(func(snap db.Snapshot) {
		// What the reply shows is written first.
		e.flushLogLocked()
		last = snap.LastTxnID()
		gen = snap.Generation()
		if version == monitorV3 && since != (db.UUID{}) {
			contents, found = e.changesSince(since)
		}
		if !found {
			if body = e.initial.get(gen, mon.shareKey); body != nil {
				e.monitors[mon] = true
				return
			}
			initial = mon.takeInitial(snap)
		}
		e.monitors[mon] = true
	})
	ss.monitors[key] = mon

	if body == nil {
		if found {
			body = mon.compose(contents, false)
		} else {
			body = mon.composeInitial(initial)
		}
		if body == nil {
			body = []byte("{}")
		}
		if !found && len(body) <= maxInitialCache {
			e.d.Read(func(snap db.Snapshot) {
				if snap.Generation() == gen {
					e.initial.put(gen, mon.shareKey, body)
				}
			})
		}
	}
	// The body goes out as it is, without a copy into the reply (it is
	// most of it, and may be the cached one).
	ss.flushLocked()
	if version == monitorV3 {
		r := make([]byte, 0, 48)
		r = strconv.AppendBool(append(r, '['), found)
		r = append(last.Append(append(r, `,"`...)), `",`...)
		ss.conn.SendReply(m.ID, r, body, closeBracket)
	} else {
		ss.conn.SendReply(m.ID, body)
	}
	mon.mu.Lock()
	mon.ready = true
	mon.mu.Unlock()
	ss.conn.Kick()
}

// changesSince merges the history after txn into one change set. It
// reports false if txn is not in the history. Called under the db lock.
func (e *dbEntry) changesSince(txn db.UUID) (map[string]map[db.UUID]*change, bool) {
	i := len(e.history) - 1
	for ; i >= 0 && e.history[i].TxnID != txn; i-- {
	}
	if i < 0 {
		return nil, false
	}
	out := map[string]map[db.UUID]*change{}
	for _, c := range e.history[i+1:] {
		for tn, rows := range c.Tables {
			p := out[tn]
			if p == nil {
				p = map[db.UUID]*change{}
				out[tn] = p
			}
			for u, rc := range rows {
				if ch := p[u]; ch != nil {
					ch.new = rc.New
				} else {
					p[u] = &change{old: rc.Old, new: rc.New}
				}
			}
		}
	}
	return out, true
}

// unregister stops the monitor from receiving commits.
func (m *monitor) unregister() {
	m.e.d.Read(func(db.Snapshot) { delete(m.e.monitors, m) })
}

func (ss *session) monitorCancel(m *jsonrpc.Message, params []json.RawMessage) {
	if len(params) != 1 {
		ss.replyError(m, syntaxErr(m.Params, "invalid parameters"))
		return
	}
	key := compactJSON(params[0])
	ss.mu.Lock()
	mon := ss.monitors[key]
	if mon == nil {
		ss.mu.Unlock()
		ss.replyError(m, "unknown monitor")
		return
	}
	// Updates already due are sent first, as OVS flushes before replying.
	ss.flushLocked()
	delete(ss.monitors, key)
	ss.mu.Unlock()
	mon.unregister()
	ss.reply(m, struct{}{})
}

// monitorCondChange handles monitor_cond_change [monitor-id, new-id,
// {table: [{"columns"?, "where"}]}]: it sends the rows that enter or leave
// the monitored set as an update, then the reply.
func (ss *session) monitorCondChange(m *jsonrpc.Message, params []json.RawMessage) {
	if len(params) != 3 {
		ss.replyError(m, syntaxErr(m.Params, "invalid parameters"))
		return
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	key := compactJSON(params[0])
	mon := ss.monitors[key]
	if mon == nil {
		ss.flushLocked()
		ss.conn.Send(jsonrpc.NewError(m.ID, syntaxErr(params[0], "unknown monitor session")))
		return
	}
	newKey := compactJSON(params[1])
	if newKey != key && ss.monitors[newKey] != nil {
		ss.flushLocked()
		ss.conn.Send(jsonrpc.NewError(m.ID, syntaxErr(params[1], "duplicate monitor ID")))
		return
	}
	if mon.version == monitorV1 {
		ss.flushLocked()
		ss.conn.Send(jsonrpc.NewError(m.ID, syntaxErr(m.Params, "monitor_cond_change is not supported for this monitor")))
		return
	}
	raw := params[2]
	var reqs map[string]json.RawMessage
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &reqs) != nil {
		ss.flushLocked()
		ss.conn.Send(jsonrpc.NewError(m.ID, syntaxErr(raw, "monitor-cond-change-requests must be object")))
		return
	}
	newConds := map[string][]db.Condition{}
	for tn, v := range reqs {
		mt := mon.tables[tn]
		if mt == nil {
			ss.flushLocked()
			ss.conn.Send(jsonrpc.NewError(m.ID, syntaxErr(nil, "no table named %s", tn)))
			return
		}
		var list []json.RawMessage
		if len(v) > 0 && v[0] == '[' {
			list, _ = jsonrpc.SplitArray(v)
		} else {
			list = []json.RawMessage{v}
		}
		for _, r := range list {
			var req struct {
				Where json.RawMessage `json:"where"`
			}
			if json.Unmarshal(r, &req) != nil {
				ss.flushLocked()
				ss.conn.Send(jsonrpc.NewError(m.ID, syntaxErr(r, "Parsing table %s failed: Object expected.", tn)))
				return
			}
			if req.Where == nil {
				continue
			}
			conds, err := parseWhere(mt.t, req.Where)
			if err != nil {
				ss.flushLocked()
				ss.conn.Send(jsonrpc.NewError(m.ID, err))
				return
			}
			newConds[tn] = conds
		}
	}

	// Send what is pending under the old conditions, then the rows whose
	// membership changes, both computed with no commit in between.
	ss.flushLocked()
	var rows map[string]map[db.UUID]*db.Row
	var pending map[string]map[db.UUID]*change
	var last db.UUID
	mon.e.d.Read(func(snap db.Snapshot) {
		mon.e.flushLogLocked() // what this sends is written first
		mon.mu.Lock()
		pending, last = mon.pending, mon.lastTxn
		if mon.one != nil {
			pending = mon.changesOf(mon.one)
		}
		mon.pending = map[string]map[db.UUID]*change{}
		mon.one, mon.commits, mon.shared = nil, 0, nil
		mon.mu.Unlock()
		rows = map[string]map[db.UUID]*db.Row{}
		for tn := range newConds {
			src := snap.Rows(tn)
			cp := make(map[db.UUID]*db.Row, len(src))
			for u, r := range src {
				cp[u] = r
			}
			rows[tn] = cp
		}
		if last == (db.UUID{}) {
			last = snap.LastTxnID()
		}
	})
	if body := mon.compose(pending, false); body != nil {
		ss.conn.Send(mon.notification(body, last))
	}
	// Rows leaving the set are deletes, rows entering are inserts, as
	// ovsdb_monitor_compose_cond_change_update sends them.
	var w tableUpdates
	for _, tn := range slices.Sorted(maps.Keys(newConds)) {
		mt := mon.tables[tn]
		oldMT := *mt
		newMT := *mt
		newMT.conds = newConds[tn]
		for _, u := range sortedUUIDs(rows[tn]) {
			r := rows[tn][u]
			was, is := oldMT.match(r), newMT.match(r)
			// The request's "select" applies here too: with insert
			// (delete) false, rows entering (leaving) are not sent.
			if was == is || is && !mt.insert || was && !mt.delete {
				continue
			}
			w.row(tn, u)
			if is {
				w.b = append(w.b, `{"insert":`...)
				w.b = appendColumns(w.b, r, mt.cols, func(c *db.Column) bool { return !isDefault(c, r) })
				w.b = append(w.b, '}')
			} else {
				w.b = append(w.b, `{"delete":null}`...)
			}
		}
		w.endTable()
		mt.conds = newConds[tn]
	}
	// The conditions differ from the request's now: compose alone.
	mon.shareKey = ""
	if newKey != key {
		delete(ss.monitors, key)
		mon.id = json.RawMessage(newKey)
		ss.monitors[newKey] = mon
	}
	if b := w.bytes(); b != nil {
		ss.conn.Send(mon.notification(b, last))
	}
	ss.conn.Send(jsonrpc.NewReply(m.ID, struct{}{}))
}
