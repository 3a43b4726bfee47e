package db

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// LockChecker describes the session running a transaction: whether it
// holds a lock (the "assert" operation) and whether it came through a
// read-only remote (a Connection row with read_only=true), which may not
// write. A nil LockChecker holds no locks and may write.
type LockChecker interface {
	HasLock(name string) bool
	ReadOnly() bool
}

// Result is the outcome of a transaction.
type Result struct {
	// JSON is the "result" array of the transact reply.
	JSON json.RawMessage
	// Commit is what was committed, nil if nothing was (an error, an
	// abort, or a transaction that changed nothing).
	Commit *Commit
	// Durable is set when a commit operation asked for durability: the
	// reply must wait until the commit is on stable storage.
	Durable bool
	// WaitUntil, if not zero, means a "wait" operation's condition did not
	// hold yet and its timeout has not expired: nothing was done; run the
	// transaction again after the next commit, or at WaitUntil, when a
	// wait that still fails reports "timed out".
	WaitUntil time.Time
}

type txn struct {
	d       *Database
	changes map[string]map[UUID]*RowChange
	// tables names the tables that have had an entry in changes, in
	// order: the commit's passes walk them instead of the map (one sort,
	// no map iteration per pass). An entry may have gone from changes.
	tables  []string
	tables4 [4]string // tables' first array: most transactions touch few
	syms    Symbols
	comment []string
	durable bool
	locks   LockChecker
	now     time.Time
	started time.Time // for wait timeouts: when the transaction first ran
	waitAt  time.Time
}

// Transact runs one transact request's operations (the params after the
// database name) atomically. started is when the request first arrived
// (for "wait" timeouts); pass the zero time for now.
func (d *Database) Transact(ops []json.RawMessage, locks LockChecker, started time.Time) Result {
	now := time.Now()
	if started.IsZero() {
		started = now
	}
	tx := &txn{d: d, changes: map[string]map[UUID]*RowChange{}, locks: locks, now: now, started: started}
	tx.tables = tx.tables4[:0]
	// Parsing needs only the schema, so it happens before taking the
	// database lock: concurrent clients parse in parallel and the lock is
	// held just to execute and commit.
	// Most operations decode straight into their members; the others
	// (and every error) take the general path through a decoded tree.
	reqs := make([]*opRequest, len(ops))
	decoded := make([]any, len(ops))
	for i, raw := range ops {
		var ok bool
		if reqs[i], ok = fastDecodeOp(raw); ok {
			if reqs[i].Op == "insert" && reqs[i].UUIDName != nil {
				tx.predeclare(*reqs[i].UUIDName, reqs[i].UUID)
			}
			continue
		}
		decoded[i], _ = decodeJSON(raw)
		if m, ok := decoded[i].(map[string]any); ok {
			reqs[i], _ = decodeOp(m)
			if name, ok := m["uuid-name"].(string); ok && m["op"] == "insert" {
				uuid, _ := m["uuid"].(string)
				tx.predeclare(name, &uuid)
			}
		}
	}
	runs := make([]opFunc, len(ops))
	for i := range ops {
		if decoded[i] == nil && reqs[i] != nil {
			raw := ops[i]
			runs[i] = tx.prepareOp(i, len(ops), reqs[i], func() any { v, _ := decodeJSON(raw); return v })
		} else {
			runs[i] = tx.prepare(i, len(ops), decoded[i])
		}
		if err := checkSurrogates(ops[i], reqs[i]); err != nil {
			runs[i] = fail(err)
		}
	}

	d.mu.Lock()
	defer d.mu.Unlock()
	results := make([][]byte, len(ops))
	failed := false
	for i, run := range runs {
		res, err := run()
		if !tx.waitAt.IsZero() {
			return Result{WaitUntil: tx.waitAt}
		}
		if err != nil {
			results[i], _ = json.Marshal(err)
			failed = true
			break
		}
		results[i] = res
	}
	var commitErr *Error
	var c *Commit
	if !failed {
		c, commitErr = tx.commit()
	}
	var b []byte
	b = append(b, '[')
	for i, r := range results {
		if i > 0 {
			b = append(b, ',')
		}
		if r == nil {
			r = []byte("null")
		}
		b = append(b, r...)
	}
	if commitErr != nil {
		ej, _ := json.Marshal(commitErr)
		if len(results) > 0 {
			b = append(b, ',')
		}
		b = append(b, ej...)
	}
	b = append(b, ']')
	if failed || commitErr != nil {
		return Result{JSON: b}
	}
	return Result{JSON: b, Commit: c, Durable: tx.durable && c != nil}
}

// predeclare gives the uuid-name of an insert its uuid (the insert's
// "uuid", if valid) before any operation runs, so an operation may refer to
// a row that a later insert creates.
func (tx *txn) predeclare(name string, uuid *string) {
	if name == "" {
		return
	}
	if tx.syms.m == nil {
		tx.syms.m = map[string]*symbol{}
	}
	if _, dup := tx.syms.m[name]; dup {
		return
	}
	sym := &symbol{uuid: NewUUID()}
	if uuid != nil {
		if u, err := ParseUUID(*uuid); err == nil {
			sym.uuid = u
		}
	}
	tx.syms.m[name] = sym
}

// opMembers lists the members each operation may have besides "op".
var opMembers = map[string]string{
	"insert":  " table row uuid-name uuid ",
	"select":  " table where columns sort ",
	"update":  " table where row ",
	"mutate":  " table where mutations ",
	"delete":  " table where ",
	"wait":    " table where columns until rows timeout ",
	"commit":  " durable ",
	"abort":   " ",
	"comment": " comment ",
	"assert":  " lock ",
}

// opRequest is one operation's members; absent ones are nil.
type opRequest struct {
	Op                                   string
	Table                                *string
	Row, Rows, Where, Columns, Mutations any
	Sort                                 []any
	UUIDName, UUID, Until, Comment, Lock *string
	Timeout                              *float64
	Durable                              *bool
}

// decodeOp picks an operation's members out of its decoded object; it
// returns the name of a member of the wrong JSON type, if any, the first in
// opMemberOrder.
func decodeOp(m map[string]any) (*opRequest, string) {
	op := &opRequest{}
	for _, name := range opMemberOrder {
		if v, ok := m[name]; ok && !op.setMember(name, v) {
			return op, name
		}
	}
	return op, ""
}

// opMemberOrder is the order in which decodeOp checks members' types.
var opMemberOrder = []string{"op", "table", "uuid-name", "uuid", "until", "comment", "lock",
	"row", "rows", "where", "columns", "mutations", "sort", "timeout", "durable"}

// emptyObject is the result of the operations that return nothing; results
// are only ever copied into the reply.
var emptyObject = []byte("{}")

// opFunc runs one prepared operation under the database lock and returns its
// result object or error.
type opFunc func() ([]byte, *Error)

func fail(err *Error) opFunc { return func() ([]byte, *Error) { return nil, err } }

func done(b []byte) opFunc { return func() ([]byte, *Error) { return b, nil } }

// prepare parses operation i of n and returns what runs it.
func (tx *txn) prepare(i, n int, raw any) opFunc {
	m, ok := raw.(map[string]any)
	if !ok {
		return fail(&Error{Name: "syntax error", Details: fmt.Sprintf("Parsing ovsdb operation %d of %d failed: Object expected.", i+1, n)})
	}
	wrap := func(format string, args ...any) *Error {
		return syntaxError(raw, "Parsing ovsdb operation %d of %d failed: %s", i+1, n, fmt.Sprintf(format, args...))
	}
	op, bad := decodeOp(m)
	if bad != "" {
		return fail(wrap("Type mismatch for member '%s'.", bad))
	}
	if allowed, ok := opMembers[op.Op]; ok {
		for name := range m {
			if name != "op" && !strings.Contains(allowed, " "+name+" ") {
				return fail(wrap("Member '%s' is present but not allowed here.", name))
			}
		}
	}
	return tx.prepareOp(i, n, op, func() any { return raw })
}

// prepareOp is prepare's part after the operation's members are known to
// be of the right types and allowed; rawOf returns the operation decoded
// as a whole, for the errors that quote it.
func (tx *txn) prepareOp(i, n int, op *opRequest, rawOf func() any) opFunc {
	wrap := func(format string, args ...any) *Error {
		return syntaxError(rawOf(), "Parsing ovsdb operation %d of %d failed: %s", i+1, n, fmt.Sprintf(format, args...))
	}
	var t *Table
	switch op.Op {
	case "insert", "select", "update", "mutate", "delete", "wait":
		if op.Table == nil {
			return fail(wrap("Required 'table' member is missing."))
		}
		t = tx.d.schema.Tables[*op.Table]
		if t == nil {
			return fail(wrap("No table named %s.", *op.Table))
		}
	}
	switch op.Op {
	case "insert", "update", "mutate", "delete", "commit":
		if tx.locks != nil && tx.locks.ReadOnly() {
			return fail(&Error{Name: "not allowed", Details: op.Op + " operation not allowed when database server is in read only mode"})
		}
	}
	need := func(v any, name string) *Error {
		if v == nil {
			return wrap("Required '%s' member is missing.", name)
		}
		return nil
	}
	switch op.Op {
	case "insert":
		if err := need(op.Row, "row"); err != nil {
			return fail(err)
		}
		if op.UUIDName != nil && !isID(*op.UUIDName) {
			return fail(wrap("Type mismatch for member 'uuid-name'."))
		}
		return tx.insert(t, op)
	case "select":
		if err := need(op.Where, "where"); err != nil {
			return fail(err)
		}
		return tx.selectOp(t, op)
	case "update":
		if err := need(op.Where, "where"); err != nil {
			return fail(err)
		}
		if err := need(op.Row, "row"); err != nil {
			return fail(err)
		}
		return tx.update(t, op, rawOf)
	case "mutate":
		if err := need(op.Where, "where"); err != nil {
			return fail(err)
		}
		if err := need(op.Mutations, "mutations"); err != nil {
			return fail(err)
		}
		return tx.mutate(t, op)
	case "delete":
		if err := need(op.Where, "where"); err != nil {
			return fail(err)
		}
		return tx.deleteOp(t, op)
	case "wait":
		if err := need(op.Where, "where"); err != nil {
			return fail(err)
		}
		if err := need(op.Rows, "rows"); err != nil {
			return fail(err)
		}
		if op.Until == nil {
			return fail(wrap("Required 'until' member is missing."))
		}
		return tx.wait(t, op, rawOf)
	case "commit":
		if op.Durable == nil {
			return fail(wrap("Required 'durable' member is missing."))
		}
		durable := *op.Durable
		return func() ([]byte, *Error) {
			tx.durable = tx.durable || durable
			return emptyObject, nil
		}
	case "abort":
		return fail(&Error{Name: "aborted", Details: "aborted by request"})
	case "comment":
		if op.Comment == nil {
			return fail(wrap("Required 'comment' member is missing."))
		}
		comment := *op.Comment
		return func() ([]byte, *Error) {
			if comment != "" {
				tx.comment = append(tx.comment, comment)
			}
			return emptyObject, nil
		}
	case "assert":
		if op.Lock == nil {
			return fail(wrap("Required 'lock' member is missing."))
		}
		lock := *op.Lock
		return func() ([]byte, *Error) {
			if tx.locks == nil || !tx.locks.HasLock(lock) {
				return nil, &Error{Name: "not owner", Details: fmt.Sprintf("Asserted lock %s not held.", lock)}
			}
			return emptyObject, nil
		}
	case "":
		return fail(wrap("Required 'op' member is missing."))
	}
	return fail(wrap("No operation \"%s\"", op.Op))
}

// current returns the row as the transaction sees it, nil if it does not
// exist.
func (tx *txn) current(table string, u UUID) *Row {
	if ch, ok := tx.changes[table][u]; ok {
		return ch.New
	}
	return tx.d.tables[table].rows[u]
}

// forEach calls fn for each row of t matching conds, as the transaction
// sees it. fn may change the row through tx.set.
func (tx *txn) forEach(t *Table, conds []Condition, fn func(r *Row) *Error) *Error {
	if u, ok := uuidEquality(conds); ok {
		if r := tx.current(t.Name, u); r != nil {
			return fn(r)
		}
		return nil
	}
	var rows []*Row
	changes := tx.changes[t.Name]
	for u, r := range tx.d.tables[t.Name].rows {
		if ch, ok := changes[u]; ok {
			r = ch.New
		}
		if r != nil && Match(conds, r) {
			rows = append(rows, r)
		}
	}
	for _, ch := range changes {
		if ch.Old == nil && ch.New != nil && Match(conds, ch.New) {
			rows = append(rows, ch.New)
		}
	}
	for _, r := range rows {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// set records the transaction's new version of a row (nil to delete).
func (tx *txn) set(table string, u UUID, r *Row) {
	m := tx.changes[table]
	if m == nil {
		m = map[UUID]*RowChange{}
		tx.changes[table] = m
		if i, found := slices.BinarySearch(tx.tables, table); !found {
			tx.tables = slices.Insert(tx.tables, i, table)
		}
	}
	if ch, ok := m[u]; ok {
		ch.New = r
		if ch.Old == nil && r == nil {
			delete(m, u)
		}
		return
	}
	m[u] = &RowChange{Old: tx.d.tables[table].rows[u], New: r}
}

// writable returns a copy of r that the transaction may modify in place.
func (tx *txn) writable(table string, r *Row) *Row {
	if ch, ok := tx.changes[table][r.UUID]; ok && ch.New == r && ch.New != ch.Old {
		return r
	}
	n := r.clone()
	tx.set(table, r.UUID, n)
	return n
}

func (tx *txn) insert(t *Table, op *opRequest) opFunc {
	var u UUID
	if op.UUID != nil {
		pu, err := ParseUUID(*op.UUID)
		if err != nil {
			js, _ := json.Marshal(*op.UUID)
			return fail(syntaxError(json.RawMessage(js), "bad uuid"))
		}
		u = pu
	}
	var sym *symbol
	if op.UUIDName != nil {
		tx.syms.lookup(*op.UUIDName)
		sym = tx.syms.m[*op.UUIDName]
		u = sym.uuid
	} else if op.UUID == nil {
		u = NewUUID()
	}
	vals, err := parseRow(t, op.Row, &tx.syms, false, nil)
	if err != nil {
		return fail(err)
	}
	// The columns left out take their defaults, which must obey the
	// constraints too ("0 is less than minimum allowed value 1").
	for _, c := range t.Columns {
		if _, ok := vals[c]; !ok {
			if err := checkDatum(&c.Type, DefaultDatum(&c.Type)); err != nil {
				return fail(err)
			}
		}
	}
	return func() ([]byte, *Error) {
		if sym != nil {
			if sym.created {
				js, _ := json.Marshal(*op.UUIDName)
				return nil, errorf("duplicate uuid-name", json.RawMessage(js), "This \"uuid-name\" appeared on an earlier \"insert\" operation.")
			}
			sym.created = true
		}
		if tx.current(t.Name, u) != nil || tx.d.tables[t.Name].rows[u] != nil {
			js, _ := json.Marshal(u.String())
			return nil, errorf("duplicate uuid", json.RawMessage(js), "This UUID would duplicate a UUID already present within the table or deleted within the same transaction.")
		}
		r := newRow(t, u)
		// Each inserted row has its own _version from the start, as
		// ovsdb_execute_insert gives it; commit renews it only for rows
		// it modifies.
		r.Version = NewUUID()
		for c, v := range vals {
			r.Cols[c.Index] = v
		}
		tx.set(t.Name, u, r)
		return []byte(`{"uuid":["uuid","` + u.String() + `"]}`), nil
	}
}

func (tx *txn) parseColumns(t *Table, raw any) ([]*Column, *Error) {
	if raw == nil {
		cols := []*Column{t.ByName["_uuid"], t.ByName["_version"]}
		return append(cols, t.Columns...), nil
	}
	return columnSet(t, raw.([]any))
}

func (tx *txn) selectOp(t *Table, op *opRequest) opFunc {
	conds, err := parseConditions(t, op.Where, &tx.syms)
	if err != nil {
		return fail(err)
	}
	cols, err := tx.parseColumns(t, op.Columns)
	if err != nil {
		return fail(err)
	}
	var sortCols []*Column
	if op.Sort != nil {
		// ovsdb-server's extension: rows ordered by these columns.
		if sortCols, err = columnSet(t, op.Sort); err != nil {
			return fail(err)
		}
	}
	return func() ([]byte, *Error) {
		var rows []*Row
		err := tx.forEach(t, conds, func(r *Row) *Error {
			rows = append(rows, r)
			return nil
		})
		if sortCols != nil {
			slices.SortStableFunc(rows, func(a, b *Row) int {
				for _, c := range sortCols {
					if n := compareDatum(&c.Type, a.Get(c), b.Get(c)); n != 0 {
						return n
					}
				}
				return 0
			})
		}
		b := []byte(`{"rows":[`)
		for i, r := range rows {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendRowJSON(b, t, r, cols)
		}
		return append(b, "]}"...), err
	}
}

// columnSet parses a "columns" or "sort" member, a list of distinct column
// names, with ovsdb_column_set_from_json's errors.
func columnSet(t *Table, list []any) ([]*Column, *Error) {
	cols := make([]*Column, 0, len(list))
	for _, v := range list {
		n, ok := v.(string)
		if !ok {
			return nil, syntaxError(list, "array of distinct column names expected")
		}
		c := t.ByName[n]
		if c == nil {
			return nil, syntaxError(list, "%s is not a valid column name", n)
		}
		if slices.Contains(cols, c) {
			return nil, syntaxError(list, "array of distinct column names expected")
		}
		cols = append(cols, c)
	}
	return cols, nil
}

// compareDatum orders data as ovsdb_datum_compare_3way: by size, then keys,
// then values.
func compareDatum(t *ColumnType, a, b Datum) int {
	if a.Len() != b.Len() {
		return cmp.Compare(a.Len(), b.Len())
	}
	for i := range a.Keys {
		if n := compareAtoms(a.Keys[i], b.Keys[i]); n != 0 {
			return n
		}
	}
	if t.Value != nil {
		for i := range a.Vals {
			if n := compareAtoms(a.Vals[i], b.Vals[i]); n != 0 {
				return n
			}
		}
	}
	return 0
}

func countJSON(n int) []byte { return []byte(`{"count":` + itoa(n) + `}`) }

func (tx *txn) update(t *Table, op *opRequest, rawOf func() any) opFunc {
	conds, err := parseConditions(t, op.Where, &tx.syms)
	if err != nil {
		return fail(err)
	}
	vals, err := parseRow(t, op.Row, &tx.syms, true, rawOf)
	if err != nil {
		return fail(err)
	}
	return func() ([]byte, *Error) {
		return tx.modifyEach(t, conds, func(w *Row) *Error {
			for c, v := range vals {
				w.Cols[c.Index] = v
			}
			return nil
		})
	}
}

func (tx *txn) mutate(t *Table, op *opRequest) opFunc {
	conds, err := parseConditions(t, op.Where, &tx.syms)
	if err != nil {
		return fail(err)
	}
	muts, err := parseMutations(t, op.Mutations, &tx.syms)
	if err != nil {
		return fail(err)
	}
	return func() ([]byte, *Error) {
		return tx.modifyEach(t, conds, func(w *Row) *Error {
			for i := range muts {
				m := &muts[i]
				v, err := m.apply(t, w.Cols[m.col.Index])
				if err != nil {
					return err
				}
				w.Cols[m.col.Index] = v
			}
			return nil
		})
	}
}

// modifyEach calls fn with a writable copy of each row of t that matches
// conds and returns the {"count": N} result.
func (tx *txn) modifyEach(t *Table, conds []Condition, fn func(w *Row) *Error) ([]byte, *Error) {
	n := 0
	err := tx.forEach(t, conds, func(r *Row) *Error {
		if err := fn(tx.writable(t.Name, r)); err != nil {
			return err
		}
		n++
		return nil
	})
	if err != nil {
		return nil, err
	}
	return countJSON(n), nil
}

func (tx *txn) deleteOp(t *Table, op *opRequest) opFunc {
	conds, err := parseConditions(t, op.Where, &tx.syms)
	if err != nil {
		return fail(err)
	}
	return func() ([]byte, *Error) {
		n := 0
		tx.forEach(t, conds, func(r *Row) *Error {
			tx.set(t.Name, r.UUID, nil)
			n++
			return nil
		})
		return countJSON(n), nil
	}
}

func (tx *txn) wait(t *Table, op *opRequest, rawOf func() any) opFunc {
	conds, err := parseConditions(t, op.Where, &tx.syms)
	if err != nil {
		return fail(err)
	}
	var cols []*Column
	if op.Columns != nil {
		if cols, err = tx.parseColumns(t, op.Columns); err != nil {
			return fail(err)
		}
	} else {
		cols = append(cols, t.Columns...)
	}
	var until bool
	switch *op.Until {
	case "==":
		until = true
	case "!=":
	default:
		return fail(syntaxError(rawOf(), "\"until\" must be \"==\" or \"!=\""))
	}
	expected, ok := op.Rows.([]any)
	if !ok {
		return fail(syntaxError(op.Rows, "array of rows expected"))
	}
	want := map[string]int{}
	for _, er := range expected {
		vals, err := parseRow(t, er, &tx.syms, false, nil)
		if err != nil {
			return fail(err)
		}
		r := newRow(t, UUID{})
		for c, v := range vals {
			r.Cols[c.Index] = v
		}
		want[string(AppendRowJSON(nil, t, r, cols))]++
	}
	timeout := time.Duration(0)
	if op.Timeout != nil {
		timeout = time.Duration(*op.Timeout * float64(time.Millisecond))
	}
	return func() ([]byte, *Error) {
		got := map[string]int{}
		tx.forEach(t, conds, func(r *Row) *Error {
			got[string(AppendRowJSON(nil, t, r, cols))]++
			return nil
		})
		equal := len(got) == len(want)
		if equal {
			for k, v := range got {
				if want[k] != v {
					equal = false
					break
				}
			}
		}
		if equal == until {
			return emptyObject, nil
		}
		if deadline := tx.started.Add(timeout); timeout > 0 && tx.now.Before(deadline) {
			tx.waitAt = deadline
			return nil, nil
		}
		return nil, &Error{Name: "timed out", Details: "\"where\" clause test failed"}
	}
}

// commit checks the transaction's changes against the schema's integrity
// rules, collects garbage, and applies them.
func (tx *txn) commit() (*Commit, *Error) {
	// Drop changes that change nothing.
	for _, tname := range tx.tables {
		rows, ok := tx.changes[tname]
		if !ok {
			continue
		}
		for u, ch := range rows {
			if ch.Old != nil && ch.New != nil && rowsEqual(ch.Old, ch.New) {
				delete(rows, u)
			}
		}
		if len(rows) == 0 {
			delete(tx.changes, tname)
		}
	}
	if err := tx.checkUncreatedSymbols(); err != nil {
		return nil, err
	}
	// The order is OVS's (ovsdb/transaction.c): references, garbage
	// collection, row limits, weak references, indexes.
	delta, err := tx.checkRefs()
	if err != nil {
		return nil, err
	}
	if err := tx.collectGarbage(delta); err != nil {
		return nil, err
	}
	if err := tx.checkMaxRows(); err != nil {
		return nil, err
	}
	if err := tx.updateWeakRefs(); err != nil {
		return nil, err
	}
	if err := tx.checkIndexes(); err != nil {
		return nil, err
	}
	if len(tx.changes) == 0 {
		return nil, nil
	}
	for _, tname := range tx.tables {
		for _, ch := range tx.changes[tname] {
			if ch.Old != nil && ch.New != nil {
				ch.New.Version = NewUUID()
			}
		}
	}
	c := &Commit{TxnID: NewUUID(), Tables: tx.changes, Comment: strings.Join(tx.comment, "\n"), Durable: tx.durable, Date: tx.now, By: tx.locks}
	for _, h := range tx.d.hooks {
		if err := h(c); err != nil {
			return nil, &Error{Name: "I/O error", Details: err.Error()}
		}
	}
	tx.d.apply(c)
	for _, s := range tx.d.subs {
		s(c)
	}
	// Hooks and subscribers have seen who committed; a commit kept
	// afterwards (the server's history for monitor_cond_since) must not
	// keep the committing session, its buffers and connection alive.
	c.By = nil
	return c, nil
}

func rowsEqual(a, b *Row) bool {
	for i := range a.Cols {
		if !a.Cols[i].Equal(b.Cols[i]) {
			return false
		}
	}
	return true
}

// checkUncreatedSymbols is a no-op on purpose: a named-uuid that no insert
// creates keeps the fresh uuid it was given, and the reference check then
// reports it as a reference to a nonexistent row, as OVS does.
func (tx *txn) checkUncreatedSymbols() *Error { return nil }

// refDelta counts, per target row, strong references added minus removed by
// the transaction.
func (tx *txn) refDelta() map[string]map[UUID]int {
	delta := map[string]map[UUID]int{}
	add := func(n int) func(string, UUID) {
		return func(t string, u UUID) {
			m := delta[t]
			if m == nil {
				m = map[UUID]int{}
				delta[t] = m
			}
			m[u] += n
		}
	}
	for _, tname := range tx.tables {
		rows := tx.changes[tname]
		td := tx.d.tables[tname]
		if len(td.schema.refs) == 0 {
			continue
		}
		for _, ch := range rows {
			if ch.Old != nil && ch.New != nil && sameRefs(td.schema, ch.Old, ch.New) {
				continue
			}
			if ch.Old != nil {
				td.forEachStrongRef(ch.Old, add(-1))
			}
			if ch.New != nil {
				td.forEachStrongRef(ch.New, add(1))
			}
		}
	}
	return delta
}

// sameRefs reports whether a modified row's reference columns are as they
// were: then its references add and remove nothing.
func sameRefs(t *Table, old, new *Row) bool {
	for _, c := range t.refs {
		if !old.Cols[c.Index].Equal(new.Cols[c.Index]) {
			return false
		}
	}
	return true
}

// collectGarbage deletes rows of non-root tables that no row references
// strongly any more, repeating as deletions drop further references; delta
// is the transaction's refDelta before it.
func (tx *txn) collectGarbage(delta map[string]map[UUID]int) *Error {
	for first := true; ; first = false {
		if !first {
			delta = tx.refDelta()
		}
		var victims []struct {
			table string
			u     UUID
		}
		consider := func(tname string, u UUID) {
			td := tx.d.tables[tname]
			if td.schema.IsRoot || tx.current(tname, u) == nil {
				return
			}
			if td.refs[u]+delta[tname][u] <= 0 {
				victims = append(victims, struct {
					table string
					u     UUID
				}{tname, u})
			}
		}
		for tname, m := range delta {
			for u, n := range m {
				if n < 0 {
					consider(tname, u)
				}
			}
		}
		for _, tname := range tx.tables {
			for u, ch := range tx.changes[tname] {
				if ch.Old == nil && ch.New != nil {
					consider(tname, u)
				}
			}
		}
		if len(victims) == 0 {
			return nil
		}
		for _, v := range victims {
			tx.set(v.table, v.u, nil)
		}
	}
}

// updateWeakRefs removes weak references to rows that do not exist after the
// transaction, from changed rows and from rows referring to deleted ones.
func (tx *txn) updateWeakRefs() *Error {
	var deleted map[string]bool
	for _, tname := range tx.tables {
		for _, ch := range tx.changes[tname] {
			if ch.New == nil {
				if deleted == nil {
					deleted = map[string]bool{}
				}
				deleted[tname] = true
				break
			}
		}
	}
	for _, td := range tx.d.weakTables {
		tname, weak := td.schema.Name, td.schema.weak
		check := func(r *Row) *Error {
			for _, c := range weak {
				v := r.Cols[c.Index]
				nv, n := tx.dropDangling(&c.Type, v)
				if n == 0 {
					continue
				}
				w := tx.writable(tname, r)
				w.Cols[c.Index] = nv
				r = w
				if nv.Len() < c.Type.Min {
					return &Error{Name: "constraint violation", Details: fmt.Sprintf("Deletion of %d weak reference(s) to deleted (or never-existing) rows from column \"%s\" in \"%s\" row %s caused this column to become empty, but constraints on this column disallow an empty column.", n, c.Name, tname, r.UUID)}
				}
			}
			return nil
		}
		targetsDeleted := false
		for _, c := range weak {
			if deleted[c.Type.Key.RefTable] || (c.Type.Value != nil && deleted[c.Type.Value.RefTable]) {
				targetsDeleted = true
			}
		}
		if targetsDeleted {
			if err := tx.forEach(td.schema, nil, check); err != nil {
				return err
			}
			continue
		}
		for _, ch := range tx.changes[tname] {
			if ch.New != nil {
				if err := check(ch.New); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (tx *txn) dropDangling(t *ColumnType, v Datum) (Datum, int) {
	dangling := func(bt *BaseType, a Atom) bool {
		return bt != nil && bt.RefWeak && bt.RefTable != "" && tx.current(bt.RefTable, a.(UUID)) == nil
	}
	n := 0
	for i := range v.Keys {
		if dangling(&t.Key, v.Keys[i]) || (v.Vals != nil && dangling(t.Value, v.Vals[i])) {
			n++
		}
	}
	if n == 0 {
		return v, 0
	}
	var nv Datum
	nv.Keys = []Atom{}
	if v.Vals != nil {
		nv.Vals = []Atom{}
	}
	for i := range v.Keys {
		if dangling(&t.Key, v.Keys[i]) || (v.Vals != nil && dangling(t.Value, v.Vals[i])) {
			continue
		}
		nv.Keys = append(nv.Keys, v.Keys[i])
		if v.Vals != nil {
			nv.Vals = append(nv.Vals, v.Vals[i])
		}
	}
	return nv, n
}

// checkRefs checks that every strong reference a changed row makes resolves
// and that no deleted row is still referenced; it returns the transaction's
// refDelta.
func (tx *txn) checkRefs() (map[string]map[UUID]int, *Error) {
	for _, tname := range tx.tables {
		td := tx.d.tables[tname]
		for _, ch := range tx.changes[tname] {
			if ch.New == nil {
				continue
			}
			for _, c := range td.schema.refs {
				v := ch.New.Cols[c.Index]
				if ch.Old != nil && v.Equal(ch.Old.Cols[c.Index]) {
					// As OVS's update_row_ref_count, only what the
					// transaction changed: a reference it kept to a row
					// it deletes is the deletion's error, below.
					continue
				}
				for _, p := range []struct {
					bt    *BaseType
					atoms []Atom
				}{{&c.Type.Key, v.Keys}, {c.Type.Value, v.Vals}} {
					if p.bt == nil || p.bt.RefTable == "" || p.bt.RefWeak {
						continue
					}
					for _, a := range p.atoms {
						if tx.current(p.bt.RefTable, a.(UUID)) == nil {
							return nil, &Error{Name: "referential integrity violation", Details: fmt.Sprintf("Table %s column %s row %s references nonexistent row %s in table %s.", tname, c.Name, ch.New.UUID, a.(UUID), p.bt.RefTable)}
						}
					}
				}
			}
		}
	}
	delta := tx.refDelta()
	for _, tname := range tx.tables {
		td := tx.d.tables[tname]
		for u, ch := range tx.changes[tname] {
			if ch.New == nil && ch.Old != nil {
				if n := td.refs[u] + delta[tname][u]; n > 0 {
					return nil, &Error{Name: "referential integrity violation", Details: fmt.Sprintf("cannot delete %s row %s because of %d remaining reference(s)", tname, u, n)}
				}
			}
		}
	}
	return delta, nil
}

func (tx *txn) checkMaxRows() *Error {
	for _, tname := range tx.tables {
		td := tx.d.tables[tname]
		if td.schema.MaxRows == 0 {
			continue
		}
		n := len(td.rows)
		for _, ch := range tx.changes[tname] {
			switch {
			case ch.Old == nil && ch.New != nil:
				n++
			case ch.Old != nil && ch.New == nil:
				n--
			}
		}
		if n > td.schema.MaxRows {
			return &Error{Name: "constraint violation", Details: fmt.Sprintf("transaction causes \"%s\" table to contain %d rows, greater than the schema-defined limit of %d row(s)", tname, n, td.schema.MaxRows)}
		}
	}
	return nil
}

func (tx *txn) checkIndexes() *Error {
	for _, tname := range tx.tables {
		td := tx.d.tables[tname]
		for i, cols := range td.schema.Indexes {
			seen := map[string]UUID{}
			for u, ch := range tx.changes[tname] {
				if ch.New == nil {
					continue
				}
				k := indexKey(cols, ch.New)
				if other, ok := seen[k]; ok {
					return indexError(td.schema, cols, ch.New, other, u, true)
				}
				seen[k] = u
				if owner, ok := td.indexes[i][k]; ok && owner != u {
					// The committed owner keeps the key unless the
					// transaction deleted it or changed its key.
					if cur := tx.current(tname, owner); cur != nil && indexKey(cols, cur) == k {
						return indexError(td.schema, cols, ch.New, owner, u, false)
					}
				}
			}
		}
	}
	return nil
}

func indexError(t *Table, cols []*Column, r *Row, first, second UUID, bothNew bool) *Error {
	names := make([]string, len(cols))
	vals := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
		vals[i] = datumString(r.Cols[c.Index])
	}
	firstDesc := "existed in the database before this transaction and was not modified by the transaction"
	if bothNew {
		firstDesc = "was inserted by this transaction"
	}
	return &Error{Name: "constraint violation", Details: fmt.Sprintf("Transaction causes multiple rows in \"%s\" table to have identical values (%s) for index on column%s \"%s\".  First row, with UUID %s, %s.  Second row, with UUID %s, was inserted by this transaction.",
		t.Name, strings.Join(vals, ", "), plural(len(cols)), strings.Join(names, "\", \""), first, firstDesc, second)}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func datumString(d Datum) string {
	if len(d.Keys) == 1 && d.Vals == nil {
		if s, ok := d.Keys[0].(string); ok {
			return s
		}
		return atomString(d.Keys[0])
	}
	return string(AppendDatumJSON(nil, d, d.Vals != nil))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// isID reports whether s is an RFC 7047 <id>: a letter or underscore, then
// letters, digits and underscores.
func isID(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
