package ofproto

import (
	"fmt"

	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// Per-table settings of OFPT_TABLE_MOD, as OVS's table_mod: the miss
// behaviour OpenFlow 1.1 and 1.2 set (tableMiss, read by translations),
// and the eviction and vacancy events flags of 1.4+, which OFPMP_TABLE_DESC
// reports. Neither of the latter changes what the tables do: tables have
// no flow limit (as OVS's without a Flow_Table flow_limit, which govs does
// not implement), so nothing is ever evicted, and a table's vacancy stays
// at 99% (100% empty). OVS would send a VACANCY_DOWN table status only for
// a vacancy_down of 100 when a flow enters an empty table; govs sends no
// OFPT_TABLE_STATUS, and logs a warning when that setting is made (README).

// tableSettings are a table's 1.4+ settings.
type tableSettings struct {
	eviction, vacancy      bool
	vacancyDown, vacancyUp uint8
}

// readOnlyTable is the last table, OVS's hidden internal one, which
// TABLE_MOD may not change (OFPTMFC_EPERM).
const readOnlyTable = NumTables - 1

// TableMod applies OFPT_TABLE_MOD (OVS's table_mod).
func (br *Bridge) TableMod(m *ofp.TableMod) *ofp.Error {
	if m.EvictionFlags != ^uint32(0) && m.EvictionFlags != ofp.EvictionFlagsOVS {
		// OVS's flags are fixed, as OpenFlow 1.4 allows.
		return &ofp.Error{Errno: ofp.TableModBadConfig, Name: "OFPT_TABLE_MOD", Detail: "eviction flags cannot be changed"}
	}
	if m.Vacancy == ofp.TableSettingOn && m.VacancyDown == 100 {
		// The one setting under which OVS, its tables unlimited too,
		// would send a table status (VACANCY_DOWN, as a flow enters an
		// empty table): reported, not done.
		warnRL(br.backer.ofLog, br.backer.ofRL, fmt.Sprintf("%s: vacancy_down of 100%% accepted, but govs sends no OFPT_TABLE_STATUS vacancy events", br.name))
	}
	if m.Table == ofp.TableAll {
		for id := range readOnlyTable {
			br.tableMod(uint8(id), m)
		}
		return nil
	}
	if m.Table == readOnlyTable {
		return &ofp.Error{Errno: ofp.TableModEPerm, Name: "OFPT_TABLE_MOD", Detail: "table 254 is read-only"}
	}
	br.tableMod(m.Table, m)
	return nil
}

func (br *Bridge) tableMod(id uint8, m *ofp.TableMod) {
	if m.Miss != ofp.TableMissDefault && uint32(m.Miss) != br.tableMiss[id].Swap(uint32(m.Miss)) {
		br.flowsChanged()
	}
	br.tableSetMu.Lock()
	defer br.tableSetMu.Unlock()
	s := &br.tableSet[id]
	switch m.Eviction {
	case ofp.TableSettingOn:
		s.eviction = true
	case ofp.TableSettingOff:
		s.eviction = false
	}
	if m.Vacancy != ofp.TableSettingDefault {
		s.vacancyDown, s.vacancyUp = m.VacancyDown, m.VacancyUp
		s.vacancy = m.Vacancy == ofp.TableSettingOn
	}
}

// TableMiss returns table id's miss behaviour (ofp.TableMiss*).
func (br *Bridge) TableMiss(id uint8) uint8 { return uint8(br.tableMiss[id].Load()) }

// TableDescs reports the visible tables' settings for OFPMP_TABLE_DESC.
func (br *Bridge) TableDescs() []ofp.TableDesc {
	ft := br.tables.Load()
	br.tableSetMu.Lock()
	defer br.tableSetMu.Unlock()
	descs := make([]ofp.TableDesc, readOnlyTable)
	for id := range descs {
		s := br.tableSet[id]
		d := ofp.TableDesc{ID: uint8(id), Eviction: s.eviction, VacancyEvents: s.vacancy,
			VacancyDown: s.vacancyDown, VacancyUp: s.vacancyUp, Vacancy: 100}
		if t := ft.table(id); t != nil && t.len() > 0 {
			// OVS's oftable_vacancy with its limit of UINT_MAX flows.
			d.Vacancy = 99
		}
		descs[id] = d
	}
	return descs
}

// missContinue goes on from table id, where a lookup honouring the miss
// behaviour matched nothing, to the tables after it while each missed
// table's behaviour is "continue" (OVS's rule_dpif_lookup_from_table):
// the table it stopped at, its rule (nil for a miss there too), and ok as
// lookup's.
func (x *xlate) missContinue(id uint8) (uint8, *rule, bool) {
	br := x.of.in.br.br
	for br.TableMiss(id) == ofp.TableMissContinue && id+1 < readOnlyTable {
		if x.packets > 0 {
			br.tableStats[id].lookups.Add(x.packets)
		}
		id++
		if r, ok := x.lookup(id); r != nil || !ok {
			return id, r, ok
		}
	}
	return id, nil, true
}

// missPacketIn reports whether a miss in table id (a lookup that honours
// the miss behaviour) sends a packet-in: as OVS's, with "controller", or
// "continue" past the last table, always; by default, while OVS's miss
// rule is on (OpenFlow 1.0-1.2 controllers); with "drop", never.
func (x *xlate) missPacketIn(id uint8) bool {
	br := x.of.in.br.br
	switch br.TableMiss(id) {
	case ofp.TableMissController, ofp.TableMissContinue:
		return true
	case ofp.TableMissDrop:
		return false
	}
	return br.missPin.Load()
}
