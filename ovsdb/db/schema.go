// Package db is the OVSDB database engine: schemas, typed values, and the
// transaction executor with RFC 7047's semantics (atomic operations,
// constraints, referential integrity, weak references, garbage collection).
// It knows nothing of sockets or files: the server feeds it JSON operations
// and subscribes to its commits, storage replays records into it.
package db

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
)

// AtomicType is one of OVSDB's five atomic types.
type AtomicType uint8

const (
	TypeInteger AtomicType = iota + 1
	TypeReal
	TypeBoolean
	TypeString
	TypeUUID
)

var atomicTypeNames = map[string]AtomicType{
	"integer": TypeInteger, "real": TypeReal, "boolean": TypeBoolean,
	"string": TypeString, "uuid": TypeUUID,
}

func (t AtomicType) String() string {
	for n, v := range atomicTypeNames {
		if v == t {
			return n
		}
	}
	return "<invalid>"
}

// BaseType is the type of a key or value, with its constraints.
type BaseType struct {
	Type                   AtomicType
	Enum                   *Datum // nil if not an enumeration
	MinInteger, MaxInteger int64
	MinReal, MaxReal       float64
	MinLength, MaxLength   int64
	RefTable               string
	RefWeak                bool // refType "weak"
}

// Unlimited is the max of a column type without an upper bound on its size.
const Unlimited = math.MaxInt

// ColumnType is a column's type: a key, an optional value, and size bounds.
type ColumnType struct {
	Key      BaseType
	Value    *BaseType
	Min, Max int
}

// IsMap reports whether the column holds key-value pairs.
func (t *ColumnType) IsMap() bool { return t.Value != nil }

// IsScalar reports whether the column holds exactly one atom.
func (t *ColumnType) IsScalar() bool { return t.Value == nil && t.Min == 1 && t.Max == 1 }

// IsOptional reports whether the column holds zero or one key.
func (t *ColumnType) IsOptional() bool { return t.Min == 0 && t.Max == 1 }

// Column is one column of a table.
type Column struct {
	Name      string
	Index     int // position in Row.Cols; -1 for _uuid, -2 for _version
	Type      ColumnType
	Mutable   bool
	Ephemeral bool
}

const (
	colUUID    = -1
	colVersion = -2
)

// Table is one table's schema.
type Table struct {
	Name    string
	Columns []*Column          // user columns, sorted by name; Columns[i].Index == i
	ByName  map[string]*Column // includes _uuid and _version
	MaxRows int                // 0 = unlimited
	IsRoot  bool
	Indexes [][]*Column
	// refs lists the user columns that hold references, for integrity
	// checks and garbage collection; weak those of them with a weak
	// reference (in their keys or values).
	refs, weak []*Column
}

// Column returns the named column, including _uuid and _version, or nil.
func (t *Table) Column(name string) *Column { return t.ByName[name] }

// Schema is a database schema.
type Schema struct {
	Name    string
	Version string
	Tables  map[string]*Table
	raw     json.RawMessage
}

// JSON returns the schema as given to ParseSchema, compacted; it is what
// get_schema returns.
func (s *Schema) JSON() json.RawMessage { return s.raw }

// TableNames returns the table names in sorted order.
func (s *Schema) TableNames() []string {
	names := make([]string, 0, len(s.Tables))
	for n := range s.Tables {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

type jsonSchema struct {
	Name    string                     `json:"name"`
	Version string                     `json:"version"`
	Tables  map[string]jsonTableSchema `json:"tables"`
}

type jsonTableSchema struct {
	Columns map[string]jsonColumn `json:"columns"`
	MaxRows *int                  `json:"maxRows"`
	IsRoot  *bool                 `json:"isRoot"`
	Indexes [][]string            `json:"indexes"`
}

type jsonColumn struct {
	Type      json.RawMessage `json:"type"`
	Ephemeral bool            `json:"ephemeral"`
	Mutable   *bool           `json:"mutable"`
}

// ParseSchema parses an OVSDB schema (RFC 7047 section 3.2).
func ParseSchema(data []byte) (*Schema, error) {
	var js jsonSchema
	if err := json.Unmarshal(data, &js); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	if js.Name == "" {
		return nil, fmt.Errorf("schema: missing name")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, data); err != nil {
		return nil, err
	}
	s := &Schema{Name: js.Name, Version: js.Version, Tables: map[string]*Table{}, raw: buf.Bytes()}
	for tname, jt := range js.Tables {
		t := &Table{Name: tname, ByName: map[string]*Column{}, IsRoot: true}
		// RFC 7047: isRoot defaults to... OVS treats a missing isRoot as
		// true only when the schema predates root sets; a schema with
		// isRoot on any table makes the others non-root.
		if jt.MaxRows != nil {
			t.MaxRows = *jt.MaxRows
		}
		names := make([]string, 0, len(jt.Columns))
		for cname := range jt.Columns {
			names = append(names, cname)
		}
		sort.Strings(names)
		for i, cname := range names {
			jc := jt.Columns[cname]
			ct, err := parseColumnType(jc.Type)
			if err != nil {
				return nil, fmt.Errorf("schema: table %s column %s: %w", tname, cname, err)
			}
			c := &Column{Name: cname, Index: i, Type: ct, Mutable: jc.Mutable == nil || *jc.Mutable, Ephemeral: jc.Ephemeral}
			t.Columns = append(t.Columns, c)
			t.ByName[cname] = c
			if ct.Key.RefTable != "" || (ct.Value != nil && ct.Value.RefTable != "") {
				t.refs = append(t.refs, c)
			}
			if (ct.Key.RefTable != "" && ct.Key.RefWeak) || (ct.Value != nil && ct.Value.RefTable != "" && ct.Value.RefWeak) {
				t.weak = append(t.weak, c)
			}
		}
		uuidType := ColumnType{Key: BaseType{Type: TypeUUID}, Min: 1, Max: 1}
		t.ByName["_uuid"] = &Column{Name: "_uuid", Index: colUUID, Type: uuidType}
		t.ByName["_version"] = &Column{Name: "_version", Index: colVersion, Type: uuidType}
		for _, idx := range jt.Indexes {
			var cols []*Column
			for _, cname := range idx {
				c := t.ByName[cname]
				if c == nil || c.Index < 0 {
					return nil, fmt.Errorf("schema: table %s index names unknown column %s", tname, cname)
				}
				cols = append(cols, c)
			}
			t.Indexes = append(t.Indexes, cols)
		}
		s.Tables[tname] = t
	}
	// isRoot: when no table in the schema says isRoot, every table is a
	// root (RFC 7047 databases without root sets); otherwise a table is a
	// root only if it says so (ovsdb/table.c).
	anyRoot := false
	for _, jt := range js.Tables {
		if jt.IsRoot != nil {
			anyRoot = true
		}
	}
	for tname, jt := range js.Tables {
		s.Tables[tname].IsRoot = !anyRoot || (jt.IsRoot != nil && *jt.IsRoot)
	}
	for _, t := range s.Tables {
		for _, c := range t.refs {
			for _, bt := range []*BaseType{&c.Type.Key, c.Type.Value} {
				if bt != nil && bt.RefTable != "" && s.Tables[bt.RefTable] == nil {
					return nil, fmt.Errorf("schema: table %s column %s refers to unknown table %s", t.Name, c.Name, bt.RefTable)
				}
			}
		}
	}
	return s, nil
}

func parseColumnType(raw json.RawMessage) (ColumnType, error) {
	var name string
	if json.Unmarshal(raw, &name) == nil {
		bt, err := parseBaseType(raw)
		return ColumnType{Key: bt, Min: 1, Max: 1}, err
	}
	var jt struct {
		Key   json.RawMessage `json:"key"`
		Value json.RawMessage `json:"value"`
		Min   *int            `json:"min"`
		Max   json.RawMessage `json:"max"`
	}
	if err := json.Unmarshal(raw, &jt); err != nil {
		return ColumnType{}, err
	}
	if jt.Key == nil {
		return ColumnType{}, fmt.Errorf("type has no key")
	}
	ct := ColumnType{Min: 1, Max: 1}
	var err error
	if ct.Key, err = parseBaseType(jt.Key); err != nil {
		return ct, err
	}
	if jt.Value != nil {
		v, err := parseBaseType(jt.Value)
		if err != nil {
			return ct, err
		}
		ct.Value = &v
	}
	if jt.Min != nil {
		ct.Min = *jt.Min
	}
	if jt.Max != nil {
		var s string
		if json.Unmarshal(jt.Max, &s) == nil {
			if s != "unlimited" {
				return ct, fmt.Errorf("bad max %q", s)
			}
			ct.Max = Unlimited
		} else if err := json.Unmarshal(jt.Max, &ct.Max); err != nil {
			return ct, err
		}
	}
	if ct.Min < 0 || ct.Min > 1 || ct.Max < 1 || ct.Min > ct.Max {
		return ct, fmt.Errorf("bad min/max %d/%d", ct.Min, ct.Max)
	}
	return ct, nil
}

func parseBaseType(raw json.RawMessage) (BaseType, error) {
	bt := BaseType{MinInteger: math.MinInt64, MaxInteger: math.MaxInt64,
		MinReal: -math.MaxFloat64, MaxReal: math.MaxFloat64, MaxLength: math.MaxInt64}
	var name string
	if json.Unmarshal(raw, &name) == nil {
		t, ok := atomicTypeNames[name]
		if !ok {
			return bt, fmt.Errorf("unknown atomic type %q", name)
		}
		bt.Type = t
		return bt, nil
	}
	var jb struct {
		Type       string          `json:"type"`
		Enum       json.RawMessage `json:"enum"`
		MinInteger *int64          `json:"minInteger"`
		MaxInteger *int64          `json:"maxInteger"`
		MinReal    *float64        `json:"minReal"`
		MaxReal    *float64        `json:"maxReal"`
		MinLength  *int64          `json:"minLength"`
		MaxLength  *int64          `json:"maxLength"`
		RefTable   string          `json:"refTable"`
		RefType    string          `json:"refType"`
	}
	if err := json.Unmarshal(raw, &jb); err != nil {
		return bt, err
	}
	t, ok := atomicTypeNames[jb.Type]
	if !ok {
		return bt, fmt.Errorf("unknown atomic type %q", jb.Type)
	}
	bt.Type = t
	if jb.MinInteger != nil {
		bt.MinInteger = *jb.MinInteger
	}
	if jb.MaxInteger != nil {
		bt.MaxInteger = *jb.MaxInteger
	}
	if jb.MinReal != nil {
		bt.MinReal = *jb.MinReal
	}
	if jb.MaxReal != nil {
		bt.MaxReal = *jb.MaxReal
	}
	if jb.MinLength != nil {
		bt.MinLength = *jb.MinLength
	}
	if jb.MaxLength != nil {
		bt.MaxLength = *jb.MaxLength
	}
	if t == TypeUUID {
		bt.RefTable = jb.RefTable
		bt.RefWeak = jb.RefType == "weak"
	}
	if jb.Enum != nil {
		plain := BaseType{Type: t, MinInteger: math.MinInt64, MaxInteger: math.MaxInt64,
			MinReal: -math.MaxFloat64, MaxReal: math.MaxFloat64, MaxLength: math.MaxInt64}
		ct := ColumnType{Key: plain, Min: 0, Max: Unlimited}
		d, err := ParseDatum(&ct, jb.Enum, nil)
		if err != nil {
			return bt, fmt.Errorf("enum: %w", err)
		}
		bt.Enum = &d
	}
	return bt, nil
}
