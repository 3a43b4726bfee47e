package db

// Usage is what a database holds, counted as ovsdb-server's memory/show
// counts it (ovsdb_get_memory_usage and the weak references of
// ovsdb/transaction.c):
type Usage struct {
	// Cells is rows times columns, _uuid and _version included.
	Cells int
	// Atoms is the values in those cells: one per set element or
	// scalar, two per map pair, _uuid and _version one each.
	Atoms int
	// WeakRefs is the weak references from one row to another that
	// exists: one per referring key or value, a row's references to
	// itself not counted.
	WeakRefs int
}

// Usage counts what the database holds now. It walks every row: cheap
// next to a transaction, but not meant for every commit.
func (d *Database) Usage() Usage {
	d.mu.Lock()
	defer d.mu.Unlock()
	var u Usage
	for _, td := range d.tables {
		t := td.schema
		ncols := len(t.Columns) + 2
		u.Cells += ncols * len(td.rows)
		for _, r := range td.rows {
			u.Atoms += 2
			for i, c := range t.Columns {
				n := len(r.Cols[i].Keys)
				if c.Type.IsMap() {
					n *= 2
				}
				u.Atoms += n
			}
			for _, c := range t.refs {
				v := r.Cols[c.Index]
				if kt := c.Type.Key; kt.RefWeak {
					u.WeakRefs += d.weakRefs(td, r, kt.RefTable, v.Keys)
				}
				if vt := c.Type.Value; vt != nil && vt.RefWeak {
					u.WeakRefs += d.weakRefs(td, r, vt.RefTable, v.Vals)
				}
			}
		}
	}
	return u
}

// weakRefs counts the atoms of r that refer to an existing row of table
// other than r itself.
func (d *Database) weakRefs(td *tableData, r *Row, table string, atoms []Atom) int {
	dst := d.tables[table]
	if dst == nil {
		return 0
	}
	n := 0
	for _, a := range atoms {
		u, ok := a.(UUID)
		if !ok || (dst == td && u == r.UUID) {
			continue
		}
		if dst.rows[u] != nil {
			n++
		}
	}
	return n
}
