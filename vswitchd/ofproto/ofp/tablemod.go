package ofp

import "encoding/binary"

// OFPT_TABLE_MOD (1.1+) and OFPMP_TABLE_DESC (1.4+), as OVS's
// lib/ofp-table.c decodes and encodes them: a table's miss behaviour
// (OpenFlow 1.1 and 1.2 only), eviction and vacancy events (1.4+).

// StatsTableDesc is OFPMP_TABLE_DESC (1.4+).
const StatsTableDesc StatsKind = 14

// Table miss behaviours (OVS's enum ofputil_table_miss). TableMissDefault
// is what a table has until an OpenFlow 1.1 or 1.2 TABLE_MOD sets
// another: a miss goes to the controllers of OpenFlow 1.0-1.2 connections.
const (
	TableMissDefault uint8 = iota
	TableMissController
	TableMissContinue
	TableMissDrop
)

// TableSetting is a TABLE_MOD's eviction or vacancy events setting.
type TableSetting uint8

// Eviction and vacancy settings: unchanged (versions before 1.4), on, off.
const (
	TableSettingDefault TableSetting = iota
	TableSettingOn
	TableSettingOff
)

// EvictionFlagsOVS are the eviction flags OVS (and govs) reports and
// accepts: OFPTMPEF14_OTHER|IMPORTANCE|LIFETIME.
const EvictionFlagsOVS = 7

// TableMod is OFPT_TABLE_MOD.
type TableMod struct {
	Header
	// Table is the table, TableAll for every one.
	Table uint8
	// Miss is a TableMiss* value (TableMissDefault: none given).
	Miss                   uint8
	Eviction, Vacancy      TableSetting
	EvictionFlags          uint32 // ^uint32(0): no eviction property
	VacancyDown, VacancyUp uint8  // a vacancy property's thresholds
}

// Table configuration bits (ofp_table_config).
const (
	tableMiss11Mask     = 3 // OFPTC11_TABLE_MISS_MASK
	tableMiss11Continue = 1
	tableMiss11Drop     = 2
	tableEviction14     = 1 << 2 // OFPTC14_EVICTION
	tableVacancy14      = 1 << 3 // OFPTC14_VACANCY_EVENTS
)

// Table mod properties (OFPTMPT14_*).
const (
	tableModPropEviction = 2
	tableModPropVacancy  = 3
)

// decodeTableMod decodes ofp11_table_mod (1.1-1.3) and ofp14_table_mod
// with its properties (1.4+), as OVS's ofputil_decode_table_mod.
func decodeTableMod(h Header, body []byte) (Message, error) {
	const name = "OFPT_TABLE_MOD"
	if h.Version == V10 {
		return nil, errorf(BadType, name, "in %s", h.Version)
	}
	if len(body) < 8 || h.Version < V14 && len(body) != 8 {
		return nil, errorf(BadLen, name, "%d bytes of body", len(body))
	}
	m := &TableMod{Header: h, Table: body[0], EvictionFlags: ^uint32(0)}
	config := binary.BigEndian.Uint32(body[4:])
	if h.Version == V11 || h.Version == V12 {
		// OVS's ofputil_decode_table_miss: an undefined value is a
		// controller's (OVS logs it).
		switch config & tableMiss11Mask {
		case tableMiss11Continue:
			m.Miss = TableMissContinue
		case tableMiss11Drop:
			m.Miss = TableMissDrop
		default:
			m.Miss = TableMissController
		}
	}
	if h.Version < V14 {
		return m, nil
	}
	m.Eviction, m.Vacancy = TableSettingOff, TableSettingOff
	if config&tableEviction14 != 0 {
		m.Eviction = TableSettingOn
	}
	if config&tableVacancy14 != 0 {
		m.Vacancy = TableSettingOn
	}
	for props := body[8:]; len(props) > 0; {
		if len(props) < 4 {
			return nil, errorf(BadAsyncLen, name, "%d bytes of property", len(props))
		}
		typ, l := binary.BigEndian.Uint16(props), int(binary.BigEndian.Uint16(props[2:]))
		padded := (l + 7) &^ 7
		if l < 4 || padded > len(props) {
			return nil, errorf(BadAsyncLen, name, "property of %d bytes in %d", l, len(props))
		}
		if typ == 0xffff && l < 12 {
			// An experimenter property's header is 12 bytes.
			return nil, errorf(BadAsyncLen, name, "experimenter property of %d bytes", l)
		}
		val := props[4:l]
		props = props[padded:]
		switch typ {
		case tableModPropEviction:
			if len(val) != 4 {
				return nil, errorf(BadAsyncLen, name, "eviction property of %d bytes", l)
			}
			m.EvictionFlags = binary.BigEndian.Uint32(val)
		case tableModPropVacancy:
			if len(val) != 4 {
				return nil, errorf(BadAsyncLen, name, "vacancy property of %d bytes", l)
			}
			m.VacancyDown, m.VacancyUp = val[0], val[1]
			switch {
			case m.VacancyDown > m.VacancyUp:
				return nil, errorf(BadPropValue, name, "Value of vacancy_down is greater than vacancy_up")
			case m.VacancyDown > 100 || m.VacancyUp > 100:
				return nil, errorf(BadPropValue, name, "Vacancy threshold percentage should not be greater than 100")
			case val[2] != 0:
				return nil, errorf(BadPropValue, name, "Vacancy value should be zero for table-mod messages")
			}
		default:
			// OVS's answer to an unknown table mod property.
			return nil, errorf(BadType, name, "property type %d", typ)
		}
	}
	return m, nil
}

// TableDesc is one table's OFPMP_TABLE_DESC entry.
type TableDesc struct {
	ID       uint8
	Eviction bool
	// Vacancy: vacancy events are on, with thresholds VacancyDown and
	// VacancyUp; Vacancy is the table's vacancy now, in percent.
	VacancyEvents                   bool
	VacancyDown, VacancyUp, Vacancy uint8
}

// EncodeTableDescReply answers OFPMP_TABLE_DESC: each table's
// ofp14_table_desc with OVS's eviction property and, where vacancy events
// are on, the vacancy property.
func EncodeTableDescReply(v Version, xid uint32, tables []TableDesc) [][]byte {
	r := newStatsReply(v, xid, StatsTableDesc, false)
	for _, t := range tables {
		var config uint32
		if t.Eviction {
			config |= tableEviction14
		}
		n := 16
		if t.VacancyEvents {
			config |= tableVacancy14
			n += 8
		}
		var b []byte
		b = put16(b, uint16(n))
		b = append(b, t.ID, 0)
		b = put32(b, config)
		b = put16(b, tableModPropEviction)
		b = put16(b, 8)
		b = put32(b, EvictionFlagsOVS)
		if t.VacancyEvents {
			b = put16(b, tableModPropVacancy)
			b = put16(b, 8)
			b = append(b, t.VacancyDown, t.VacancyUp, t.Vacancy, 0)
		}
		r.add(b)
	}
	return r.done()
}

// tableStatsConfig is table statistics' config in OpenFlow 1.1 and 1.2:
// the miss behaviour as OFPTC11_TABLE_MISS_*, but in 1.1 OVS's own number
// for it (ofputil_put_ofp11_table_stats writes its enum, so that Debian's
// ovs-ofctl reads a table set to "controller" as "continue"; copied here,
// as the tools compare the two switches' output).
func tableStatsConfig(v Version, miss uint8) uint32 {
	if v == V11 {
		return uint32(miss)
	}
	switch miss {
	case TableMissContinue:
		return tableMiss11Continue
	case TableMissDrop:
		return tableMiss11Drop
	}
	return 0
}
