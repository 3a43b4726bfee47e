package main

import (
	"fmt"
	"strings"

	"github.com/govs/govs/ovsdb/db"
	"github.com/govs/govs/utilities/internal/dbtext"
)

// fatal is ctl_fatal: the run stops with "ovs-vsctl: MSG" and exit code 1.
type fatal string

func fatalf(format string, args ...any) { panic(fatal(fmt.Sprintf(format, args...))) }

func dieIf(err error) {
	if err != nil {
		panic(fatal(err.Error()))
	}
}

// exitCode ends a run early with a status and no message (br-exists).
type exitCode int

// syntax is one command's definition (struct ctl_command_syntax).
type syntax struct {
	name     string
	min, max int
	options  string // "--if-exists,--id=", as OVS writes them
	rw       bool
	run      func(*ctx)
	post     func(*ctx)
}

// command is one parsed command of the command line.
type command struct {
	syn     *syntax
	args    []string           // args[0] is the command name
	options map[string]*string // option -> argument (nil if none)
	optKeys []string
	out     strings.Builder
	table   *dbtext.Table
}

// ctx is what a command runs with (struct ctl_context + vsctl_context).
type ctx struct {
	*command
	t        *txn
	syms     dbtext.Symbols
	ovs      *row
	tryAgain bool
	cache    *vcache
	// newIfaces are the interfaces add-br/add-port insert, checked after
	// ovs-vswitchd reconfigures.
	newIfaces *[]*row
	warn      func(module, format string, args ...any)
	realUUID  map[db.UUID]db.UUID
}

func (c *ctx) has(opt string) bool { _, ok := c.options[opt]; return ok }

func (c *ctx) opt(opt string) (string, bool) {
	v, ok := c.options[opt]
	if !ok || v == nil {
		return "", ok
	}
	return *v, true
}

func (c *ctx) invalidate() { c.cache = nil }

// --- table and column lookup ---

func lowerUnderscore(c byte) byte {
	if c == '-' {
		return '_'
	}
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// scorePartialMatch is score_partial_match: exact match wins, then a
// case- and dash-insensitive full match, then the longest prefix.
func scorePartialMatch(name, s string) uint {
	if name == s {
		return ^uint(0)
	}
	score := uint(0)
	for i := 0; ; i++ {
		var a, b byte
		if i < len(name) {
			a = name[i]
		}
		if i < len(s) {
			b = s[i]
		}
		if lowerUnderscore(a) != lowerUnderscore(b) {
			if b == 0 {
				return score
			}
			return 0
		}
		if a == 0 {
			return ^uint(0) - 1
		}
		score++
	}
}

func (c *ctx) getTable(name string) *db.Table {
	var best *db.Table
	var bestScore uint
	for _, n := range c.t.schema.TableNames() {
		s := scorePartialMatch(n, name)
		if s > bestScore {
			best, bestScore = c.t.schema.Tables[n], s
		} else if s == bestScore {
			best = nil
		}
	}
	if best != nil {
		return best
	}
	if bestScore > 0 {
		fatalf("multiple table names match \"%s\"", name)
	}
	fatalf("unknown table \"%s\"", name)
	return nil
}

func getColumn(t *db.Table, name string) (*db.Column, error) {
	var best *db.Column
	var bestScore uint
	for _, col := range t.Columns {
		s := scorePartialMatch(col.Name, name)
		if s > bestScore {
			best, bestScore = col, s
		} else if s == bestScore {
			best = nil
		}
	}
	if best != nil {
		return best, nil
	}
	if bestScore > 0 {
		var names []string
		for _, col := range t.Columns {
			if scorePartialMatch(col.Name, name) == bestScore {
				names = append(names, col.Name)
			}
		}
		return nil, fmt.Errorf("%s contains more than one column whose name matches \"%s\": %s", t.Name, name, strings.Join(names, ", "))
	}
	return nil, fmt.Errorf("%s does not contain a column whose name matches \"%s\"", t.Name, name)
}

// rowID is one way a table's rows are named on the command line
// (struct ctl_row_id): by a name column of table, then optionally through
// a reference column of that row.
type rowID struct {
	table      string
	nameColumn string // "" means the table's only row, named "."
	uuidColumn string
}

var rowIDs = map[string][]rowID{
	"Bridge":                    {{"Bridge", "name", ""}, {"Flow_Sample_Collector_Set", "", "bridge"}},
	"Controller":                {{"Bridge", "name", "controller"}},
	"Interface":                 {{"Interface", "name", ""}},
	"Mirror":                    {{"Mirror", "name", ""}},
	"Manager":                   {{"Manager", "target", ""}},
	"NetFlow":                   {{"Bridge", "name", "netflow"}},
	"Open_vSwitch":              {{"Open_vSwitch", "", ""}},
	"Port":                      {{"Port", "name", ""}},
	"QoS":                       {{"Port", "name", "qos"}},
	"SSL":                       {{"Open_vSwitch", "", "ssl"}},
	"sFlow":                     {{"Bridge", "name", "sflow"}},
	"Flow_Table":                {{"Flow_Table", "name", ""}},
	"IPFIX":                     {{"Bridge", "name", "ipfix"}, {"Flow_Sample_Collector_Set", "", "ipfix"}},
	"AutoAttach":                {{"Bridge", "name", "auto_attach"}},
	"Datapath":                  {{"Open_vSwitch", "", "datapaths"}},
	"CT_Zone":                   nil,
	"CT_Timeout_Policy":         nil,
	"Queue":                     nil,
	"Flow_Sample_Collector_Set": {{"Flow_Sample_Collector_Set", "id", ""}},
}

func (c *ctx) rowByID(t *db.Table, id rowID, rec string) *row {
	if c.t.schema.Tables[id.table] == nil {
		return nil
	}
	var referrer *row
	if id.nameColumn == "" {
		if rec != "." {
			return nil
		}
		rows := c.t.list(id.table)
		if len(rows) != 1 {
			return nil
		}
		referrer = rows[0]
	} else {
		rt := c.t.schema.Tables[id.table]
		col := rt.ByName[id.nameColumn]
		if col == nil {
			return nil
		}
		for _, r := range c.t.list(id.table) {
			d := r.get(col)
			if d.Len() != 1 {
				continue
			}
			match := false
			switch k := d.Keys[0].(type) {
			case string:
				match = k == rec
			case int64:
				match = fmt.Sprint(k) == rec
			}
			if match {
				if referrer != nil {
					fatalf("multiple rows in %s match \"%s\"", t.Name, rec)
				}
				referrer = r
			}
		}
	}
	if referrer == nil {
		return nil
	}
	if id.uuidColumn == "" {
		return referrer
	}
	uc := referrer.col(id.uuidColumn)
	if uc == nil {
		return nil
	}
	d := referrer.get(uc)
	if d.Len() == 1 {
		if u, ok := d.Keys[0].(db.UUID); ok {
			return c.t.byUUID(t.Name, u)
		}
	}
	if uc.Type.IsMap() && d.Len() == 1 {
		if u, ok := d.Vals[0].(db.UUID); ok {
			return c.t.byUUID(t.Name, u)
		}
	}
	return nil
}

// getRow finds a record by UUID (or a unique UUID prefix) or by a name.
func (c *ctx) getRow(t *db.Table, rec string, mustExist bool) *row {
	var r *row
	if u, err := db.ParseUUID(rec); err == nil {
		r = c.t.byUUID(t.Name, u)
	}
	if r == nil {
		for _, id := range rowIDs[t.Name] {
			if r = c.rowByID(t, id, rec); r != nil {
				break
			}
		}
	}
	if r == nil && len(rec) >= 4 && strings.Trim(rec, "0123456789abcdef-") == "" {
		for _, x := range c.t.list(t.Name) {
			if strings.HasPrefix(x.uuid.String(), rec) {
				if r != nil {
					fatalf("multiple rows in %s match \"%s\"", t.Name, rec)
				}
				r = x
			}
		}
	}
	if mustExist && r == nil {
		fatalf("no row \"%s\" in table %s", rec, t.Name)
	}
	return r
}

var relops = []string{"=", "!=", "<", ">", "<=", ">=", "{=}", "{!=}", "{<}", "{>}", "{<=}", "{>=}", "{in}", "{not-in}"}

func missingOperator(arg string, ops []string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: argument does not end in \"%s\"", arg, ops[0])
	switch {
	case len(ops) == 2:
		fmt.Fprintf(&b, " or \"%s\"", ops[1])
	case len(ops) > 2:
		for _, o := range ops[1 : len(ops)-1] {
			fmt.Fprintf(&b, ", \"%s\"", o)
		}
		fmt.Fprintf(&b, ", or \"%s\"", ops[len(ops)-1])
	}
	b.WriteString(" followed by a value.")
	return fmt.Errorf("%s", b.String())
}

// parseColumnKeyValue splits "COLUMN[:KEY][OP VALUE]". With ops nil no
// value may follow; otherwise one of ops must ("=" if ops is empty).
func parseColumnKeyValue(arg string, t *db.Table, ops []string, wantValue bool) (col *db.Column, key *string, op int, value *string, err error) {
	name, p, err := dbtext.ParseToken(arg)
	if err != nil {
		return nil, nil, -1, nil, err
	}
	if name == "" {
		return nil, nil, -1, nil, fmt.Errorf("%s: missing column name", arg)
	}
	if col, err = getColumn(t, name); err != nil {
		return nil, nil, -1, nil, err
	}
	if p != "" && p[0] == ':' {
		k, rest, err := dbtext.ParseToken(p[1:])
		if err != nil {
			return nil, nil, -1, nil, err
		}
		key, p = &k, rest
	}
	if wantValue {
		if len(ops) == 0 {
			ops = []string{"="}
		}
		best, bestLen := -1, 0
		for i, o := range ops {
			if len(o) > bestLen && strings.HasPrefix(p, o) && len(p) > len(o) {
				best, bestLen = i, len(o)
			}
		}
		if best < 0 {
			return nil, nil, -1, nil, missingOperator(arg, ops)
		}
		v := p[bestLen:]
		return col, key, best, &v, nil
	}
	if p != "" {
		return nil, nil, -1, nil, fmt.Errorf("%s: trailing garbage \"%s\" in argument", arg, p)
	}
	return col, key, -1, nil, nil
}

func checkMutable(r *row, c *db.Column) {
	if !c.Mutable && !r.inserted {
		fatalf("cannot modify read-only column %s in table %s", c.Name, r.t.Name)
	}
}

func isSetOp(op int) bool { return op >= 6 }

// includesAll reports whether every element of a is in b.
func includesAll(a, b db.Datum) bool {
	for i, k := range a.Keys {
		j := b.Find(k)
		if j < 0 {
			return false
		}
		if a.Vals != nil && b.Vals != nil && db.CompareAtoms(a.Vals[i], b.Vals[j]) != 0 {
			return false
		}
	}
	return true
}

func evalRelop(a, b db.Datum, op int) bool {
	switch relops[op] {
	case "=", "{=}":
		return db.CompareDatums(a, b) == 0
	case "!=", "{!=}":
		return db.CompareDatums(a, b) != 0
	case "<":
		return db.CompareDatums(a, b) < 0
	case ">":
		return db.CompareDatums(a, b) > 0
	case "<=":
		return db.CompareDatums(a, b) <= 0
	case ">=":
		return db.CompareDatums(a, b) >= 0
	case "{<}":
		return b.Len() > a.Len() && includesAll(a, b)
	case "{>}":
		return a.Len() > b.Len() && includesAll(b, a)
	case "{<=}":
		return includesAll(a, b)
	case "{>=}":
		return includesAll(b, a)
	case "{in}":
		return includesAll(a, b)
	case "{not-in}":
		for _, k := range a.Keys {
			if b.Find(k) >= 0 {
				return false
			}
		}
		return true
	}
	return false
}

func (c *ctx) conditionSatisfied(t *db.Table, r *row, arg string) bool {
	col, key, op, value, err := parseColumnKeyValue(arg, t, relops, true)
	dieIf(err)
	typ := col.Type
	typ.Max = db.Unlimited
	have := r.get(col)
	if key != nil {
		if !col.Type.IsMap() {
			fatalf("cannot specify key to check for non-map column %s", col.Name)
		}
		k, err := dbtext.ParseAtom(&col.Type.Key, *key, c.syms, false)
		dieIf(err)
		vt := db.ColumnType{Key: *col.Type.Value, Min: typ.Min, Max: db.Unlimited}
		want, err := dbtext.ParseDatum(&vt, *value, c.syms)
		dieIf(err)
		idx := have.Find(k[0])
		if idx < 0 && !isSetOp(op) {
			return false
		}
		a := db.Datum{Keys: []db.Atom{}}
		if idx >= 0 {
			a.Keys = []db.Atom{have.Vals[idx]}
		}
		return evalRelop(a, want, op)
	}
	want, err := dbtext.ParseDatum(&col.Type, *value, c.syms)
	dieIf(err)
	return evalRelop(have, want, op)
}

// --- database commands ---

func cmdComment(*ctx) {}

func cmdGet(c *ctx) {
	id, hasID := c.opt("--id")
	mustExist := !c.has("--if-exists")
	if hasID && !mustExist {
		fatalf("--if-exists and --id may not be specified together")
	}
	t := c.getTable(c.args[1])
	r := c.getRow(t, c.args[2], mustExist)
	if r == nil {
		return
	}
	if hasID {
		if id == "" || id[0] != '@' {
			fatalf("row id \"%s\" does not begin with \"@\"", id)
		}
		_, exists := c.syms[id]
		sym := c.createSymbol(id)
		if exists {
			fatalf("row id \"%s\" specified on \"get\" command was used before it was defined", id)
		}
		sym.UUID = r.uuid
		sym.StrongRef = true
	}
	for _, arg := range c.args[3:] {
		if strings.EqualFold(arg, "_uuid") || strings.EqualFold(arg, "-uuid") {
			fmt.Fprintf(&c.out, "%s\n", r.uuid)
			continue
		}
		col, key, _, _, err := parseColumnKeyValue(arg, t, nil, false)
		dieIf(err)
		c.t.verify(r, col)
		d := r.get(col)
		if key != nil {
			if !col.Type.IsMap() {
				fatalf("cannot specify key to get for non-map column %s", col.Name)
			}
			k, err := dbtext.ParseAtom(&col.Type.Key, *key, c.syms, false)
			dieIf(err)
			if idx := d.Find(k[0]); idx < 0 {
				if mustExist {
					fatalf("no key \"%s\" in %s record \"%s\" column %s", *key, t.Name, c.args[2], col.Name)
				}
			} else {
				c.out.WriteString(dbtext.AtomString(d.Vals[idx]))
			}
		} else {
			c.out.WriteString(dbtext.DatumString(d, &col.Type))
		}
		c.out.WriteByte('\n')
	}
}

var uuidType = db.ColumnType{Key: db.BaseType{Type: db.TypeUUID}, Min: 1, Max: 1}

// columnNames is parse_column_names: nil columns stand for _uuid.
func (c *ctx) columnNames(t *db.Table) []*db.Column {
	names, ok := c.opt("--columns")
	if !ok {
		cols := []*db.Column{nil}
		return append(cols, t.Columns...)
	}
	var cols []*db.Column
	for _, n := range strings.FieldsFunc(names, func(r rune) bool { return r == ',' || r == ' ' }) {
		if strings.EqualFold(n, "_uuid") {
			cols = append(cols, nil)
			continue
		}
		col, err := getColumn(t, n)
		dieIf(err)
		cols = append(cols, col)
	}
	if len(cols) == 0 {
		fatalf("must specify at least one column name")
	}
	return cols
}

func makeTable(cols []*db.Column) *dbtext.Table {
	tb := &dbtext.Table{}
	for _, col := range cols {
		if col == nil {
			tb.Headings = append(tb.Headings, "_uuid")
		} else {
			tb.Headings = append(tb.Headings, col.Name)
		}
	}
	return tb
}

func listRecord(tb *dbtext.Table, r *row, cols []*db.Column) {
	if r == nil {
		return
	}
	cells := make([]dbtext.Cell, len(cols))
	for i, col := range cols {
		if col == nil {
			cells[i] = dbtext.DatumCell(db.Datum{Keys: []db.Atom{r.uuid}}, &uuidType)
		} else {
			cells[i] = dbtext.DatumCell(r.get(col), &col.Type)
		}
	}
	tb.Rows = append(tb.Rows, cells)
}

func cmdList(c *ctx) {
	mustExist := !c.has("--if-exists")
	t := c.getTable(c.args[1])
	cols := c.columnNames(t)
	c.table = makeTable(cols)
	if len(c.args) > 2 {
		for _, rec := range c.args[2:] {
			listRecord(c.table, c.getRow(t, rec, mustExist), cols)
		}
		return
	}
	for _, r := range c.t.list(t.Name) {
		listRecord(c.table, r, cols)
	}
}

func cmdFind(c *ctx) {
	t := c.getTable(c.args[1])
	cols := c.columnNames(t)
	c.table = makeTable(cols)
rows:
	for _, r := range c.t.list(t.Name) {
		for _, arg := range c.args[2:] {
			if !c.conditionSatisfied(t, r, arg) {
				continue rows
			}
		}
		listRecord(c.table, r, cols)
	}
}

// setColumn is set_column: "COLUMN[:KEY]=VALUE" applied to r.
func (c *ctx) setColumn(t *db.Table, r *row, arg string) {
	col, key, _, value, err := parseColumnKeyValue(arg, t, nil, true)
	dieIf(err)
	checkMutable(r, col)
	if key != nil {
		if !col.Type.IsMap() {
			fatalf("cannot specify key to set for non-map column %s", col.Name)
		}
		k, err := dbtext.ParseAtom(&col.Type.Key, *key, c.syms, false)
		dieIf(err)
		v, err := dbtext.ParseAtom(col.Type.Value, *value, c.syms, false)
		dieIf(err)
		c.t.setKey(r, col, k[0], v[0])
		return
	}
	d, err := dbtext.ParseDatum(&col.Type, *value, c.syms)
	dieIf(err)
	c.t.writeColumn(r, col, d)
}

func cmdSet(c *ctx) {
	t := c.getTable(c.args[1])
	r := c.getRow(t, c.args[2], !c.has("--if-exists"))
	if r == nil {
		return
	}
	for _, arg := range c.args[3:] {
		c.setColumn(t, r, arg)
	}
	c.invalidate()
}

func elems(n int, isMap bool) string {
	if isMap {
		return "pairs"
	}
	return "values"
}

// columnOfRecord is what add and remove start with: "TABLE RECORD COLUMN".
// The row is nil if --if-exists and there is none.
func (c *ctx) columnOfRecord() (*db.Table, *db.Column, *row) {
	t := c.getTable(c.args[1])
	col, err := getColumn(t, c.args[3])
	dieIf(err)
	r := c.getRow(t, c.args[2], !c.has("--if-exists"))
	if r != nil {
		checkMutable(r, col)
	}
	return t, col, r
}

func cmdAdd(c *ctx) {
	_, col, r := c.columnOfRecord()
	if r == nil {
		return
	}
	at := col.Type
	at.Min, at.Max = 1, db.Unlimited
	add := db.Datum{Keys: []db.Atom{}}
	if col.Type.IsMap() {
		add.Vals = []db.Atom{}
	}
	for _, arg := range c.args[4:] {
		d, err := dbtext.ParseDatum(&at, arg, c.syms)
		dieIf(err)
		for i, k := range d.Keys {
			if add.Find(k) >= 0 {
				continue
			}
			add.Keys = append(add.Keys, k)
			if d.Vals != nil {
				add.Vals = append(add.Vals, d.Vals[i])
			}
			add.SortUnique()
		}
	}
	// Like OVS 3.1, an insert mutation: the server checks the size.
	d := r.get(col)
	d = db.Datum{Keys: append([]db.Atom{}, d.Keys...), Vals: cloneVals(d.Vals)}
	for i, k := range add.Keys {
		if d.Find(k) < 0 {
			d.Keys = append(d.Keys, k)
			if add.Vals != nil {
				d.Vals = append(d.Vals, add.Vals[i])
			}
		}
	}
	d.SortUnique()
	c.t.mutate(r, col, []mutation{{"insert", add, col.Type.IsMap()}}, d)
	c.invalidate()
}

func cloneVals(v []db.Atom) []db.Atom {
	if v == nil {
		return nil
	}
	return append([]db.Atom{}, v...)
}

func cmdRemove(c *ctx) {
	t, col, r := c.columnOfRecord()
	if r == nil {
		return
	}
	d := r.get(col)
	var removed []mutation
	rt := col.Type
	rt.Min, rt.Max = 1, db.Unlimited
	for _, arg := range c.args[4:] {
		rm, err := dbtext.ParseDatum(&rt, arg, c.syms)
		keysOnly := false
		if err != nil {
			if !rt.IsMap() {
				dieIf(err)
			}
			kt := db.ColumnType{Key: rt.Key, Min: 1, Max: db.Unlimited}
			rm, err = dbtext.ParseDatum(&kt, arg, c.syms)
			dieIf(err)
			keysOnly = true
		}
		removed = append(removed, mutation{"delete", rm, !keysOnly && rt.IsMap()})
		nd := db.Datum{Keys: []db.Atom{}}
		if d.Vals != nil {
			nd.Vals = []db.Atom{}
		}
		for i, k := range d.Keys {
			j := rm.Find(k)
			drop := j >= 0 && (keysOnly || d.Vals == nil || db.CompareAtoms(d.Vals[i], rm.Vals[j]) == 0)
			if !drop {
				nd.Keys = append(nd.Keys, k)
				if d.Vals != nil {
					nd.Vals = append(nd.Vals, d.Vals[i])
				}
			}
		}
		d = nd
	}
	if d.Len() < col.Type.Min {
		fatalf("\"remove\" operation would put %d %s in column %s of table %s but the minimum number is %d",
			d.Len(), elems(0, col.Type.IsMap()), col.Name, t.Name, col.Type.Min)
	}
	c.t.mutate(r, col, removed, d)
	c.invalidate()
}

func cmdClear(c *ctx) {
	t := c.getTable(c.args[1])
	r := c.getRow(t, c.args[2], !c.has("--if-exists"))
	if r == nil {
		return
	}
	for _, arg := range c.args[3:] {
		col, err := getColumn(t, arg)
		dieIf(err)
		checkMutable(r, col)
		if col.Type.Min > 0 {
			fatalf("\"clear\" operation cannot be applied to column %s of table %s, which is not allowed to be empty", col.Name, t.Name)
		}
		c.t.writeColumn(r, col, db.DefaultDatum(&col.Type))
	}
	c.invalidate()
}

func (c *ctx) createSymbol(id string) *dbtext.Symbol {
	if id == "" || id[0] != '@' {
		fatalf("row id \"%s\" does not begin with \"@\"", id)
	}
	sym := c.syms.Get(id)
	if sym.Created {
		fatalf("row id \"%s\" may only be specified on one --id option", id)
	}
	sym.Created = true
	return sym
}

func cmdCreate(c *ctx) {
	id, hasID := c.opt("--id")
	t := c.getTable(c.args[1])
	if !hasID && !t.IsRoot {
		c.warn("db_ctl_base", "applying \"create\" command to table %s without --id option will have no effect", t.Name)
	}
	var u *db.UUID
	if hasID {
		sym := c.createSymbol(id)
		if t.IsRoot {
			sym.StrongRef = true
		}
		u = &sym.UUID
	}
	r := c.t.insert(t.Name, u)
	for _, arg := range c.args[2:] {
		c.setColumn(t, r, arg)
	}
	c.out.WriteString(r.uuid.String())
}

func cmdDestroy(c *ctx) {
	mustExist := !c.has("--if-exists")
	all := c.has("--all")
	t := c.getTable(c.args[1])
	if all && len(c.args) > 2 {
		fatalf("--all and records argument should not be specified together")
	}
	if all && !mustExist {
		fatalf("--all and --if-exists should not be specified together")
	}
	if all {
		for _, r := range c.t.list(t.Name) {
			c.t.delete(r)
		}
	} else {
		for _, rec := range c.args[2:] {
			if r := c.getRow(t, rec, mustExist); r != nil {
				c.t.delete(r)
			}
		}
	}
	c.invalidate()
}

func cmdWaitUntil(c *ctx) {
	t := c.getTable(c.args[1])
	r := c.getRow(t, c.args[2], false)
	if r == nil {
		c.tryAgain = true
		return
	}
	for _, arg := range c.args[3:] {
		if !c.conditionSatisfied(t, r, arg) {
			c.tryAgain = true
			return
		}
	}
}

// --- show ---

type showTable struct {
	table, nameColumn string
	columns           []string
}

var showTables = []showTable{
	{"Open_vSwitch", "", []string{"manager_options", "bridges", "ovs_version"}},
	{"Bridge", "name", []string{"controller", "fail_mode", "datapath_type", "ports"}},
	{"Port", "name", []string{"tag", "trunks", "interfaces"}},
	{"Interface", "name", []string{"type", "options", "bfd_status", "error"}},
	{"Controller", "target", []string{"is_connected"}},
	{"Manager", "target", []string{"is_connected"}},
}

func findShow(table string) *showTable {
	for i := range showTables {
		if showTables[i].table == table {
			return &showTables[i]
		}
	}
	return nil
}

func (c *ctx) showRow(r *row, level int, shown map[string]bool) {
	show := findShow(r.t.Name)
	ind := strings.Repeat(" ", level*4)
	if show != nil && show.nameColumn != "" {
		col := r.col(show.nameColumn)
		fmt.Fprintf(&c.out, "%s%s %s\n", ind, show.table, dbtext.DatumString(r.get(col), &col.Type))
	} else {
		fmt.Fprintf(&c.out, "%s%s\n", ind, r.uuid)
	}
	if show == nil || shown[show.table] {
		return
	}
	shown[show.table] = true
	defer delete(shown, show.table)
	for _, name := range show.columns {
		col := r.col(name)
		if col == nil {
			continue
		}
		d := r.get(col)
		if col.Type.Key.Type == db.TypeUUID && col.Type.Key.RefTable != "" {
			if ref := findShow(col.Type.Key.RefTable); ref != nil {
				for _, k := range d.Keys {
					if x := c.t.byUUID(ref.table, k.(db.UUID)); x != nil {
						c.showRow(x, level+1, shown)
					}
				}
				continue
			}
		} else if col.Type.IsMap() && col.Type.Value.Type == db.TypeUUID && col.Type.Value.RefTable != "" {
			if ref := findShow(col.Type.Value.RefTable); ref != nil && ref.nameColumn != "" {
				fmt.Fprintf(&c.out, "%s    %s:\n", ind, col.Name)
				for i, k := range d.Keys {
					fmt.Fprintf(&c.out, "%s        %s=", ind, dbtext.AtomString(k))
					if x := c.t.byUUID(ref.table, d.Vals[i].(db.UUID)); x != nil {
						nc := x.col(ref.nameColumn)
						c.out.WriteString(dbtext.DatumString(x.get(nc), &nc.Type))
					} else {
						c.out.WriteString("\"<null>\"")
					}
					c.out.WriteByte('\n')
				}
				continue
			}
		}
		if !db.IsDefault(&col.Type, d) {
			fmt.Fprintf(&c.out, "%s    %s: %s\n", ind, col.Name, dbtext.DatumString(d, &col.Type))
		}
	}
}

func cmdShow(c *ctx) {
	shown := map[string]bool{}
	for _, r := range c.t.list(showTables[0].table) {
		c.showRow(r, 0, shown)
	}
}

var dbCommands = []*syntax{
	{name: "comment", min: 0, max: maxArgs, run: cmdComment},
	{name: "get", min: 2, max: maxArgs, options: "--if-exists,--id=", run: cmdGet},
	{name: "list", min: 1, max: maxArgs, options: "--if-exists,--columns=", run: cmdList},
	{name: "find", min: 1, max: maxArgs, options: "--columns=", run: cmdFind},
	{name: "set", min: 3, max: maxArgs, options: "--if-exists", rw: true, run: cmdSet},
	{name: "add", min: 4, max: maxArgs, options: "--if-exists", rw: true, run: cmdAdd},
	{name: "remove", min: 4, max: maxArgs, options: "--if-exists", rw: true, run: cmdRemove},
	{name: "clear", min: 3, max: maxArgs, options: "--if-exists", rw: true, run: cmdClear},
	{name: "create", min: 2, max: maxArgs, options: "--id=", rw: true, run: cmdCreate, post: postCreate},
	{name: "destroy", min: 1, max: maxArgs, options: "--if-exists,--all", rw: true, run: cmdDestroy},
	{name: "wait-until", min: 2, max: maxArgs, run: cmdWaitUntil},
	{name: "show", min: 0, max: 0, run: cmdShow},
}

const maxArgs = int(^uint32(0) >> 1)
