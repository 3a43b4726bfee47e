package ofproto

import (
	"fmt"
	"strings"
	"testing"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// Table miss behaviours (OpenFlow 1.1 and 1.2 TABLE_MOD): "continue" goes
// on to the next table, "drop" drops, "controller" sends a packet-in;
// eviction and vacancy settings show in the table descriptions, and the
// read-only table refuses changes.
func TestTableMod(t *testing.T) {
	tb, br := emptyTables(t)
	mustMod(t, br, fmSpec{table: 1, prio: 1, actions: []ofp.Action{output(3)}})
	actions := func() string {
		u := []datapath.Upcall{{Key: flow.Key{InPort: 1, EthType: flow.EthTypeIPv4, NwProto: flow.IPProtoUDP, NwTTL: 64}}}
		tb.Revalidate(u)
		return u[0].Actions.String()
	}
	for _, tc := range []struct {
		miss uint8
		want string
	}{
		{ofp.TableMissContinue, "3"},
		{ofp.TableMissDrop, "drop"},
		{ofp.TableMissController, "userspace("},
	} {
		if err := br.TableMod(&ofp.TableMod{Table: 0, Miss: tc.miss, EvictionFlags: ^uint32(0)}); err != nil {
			t.Fatal(err)
		}
		if got := actions(); !strings.HasPrefix(got, tc.want) {
			t.Errorf("miss %d: actions %q, want %q...", tc.miss, got, tc.want)
		}
	}
	if err := br.TableMod(&ofp.TableMod{Table: ofp.TableAll, Eviction: ofp.TableSettingOn, Vacancy: ofp.TableSettingOn,
		VacancyDown: 10, VacancyUp: 90, EvictionFlags: ^uint32(0)}); err != nil {
		t.Fatal(err)
	}
	d := br.TableDescs()
	if len(d) != NumTables-1 || !d[0].Eviction || !d[253].VacancyEvents || d[253].VacancyUp != 90 || d[1].Vacancy != 99 || d[2].Vacancy != 100 {
		t.Errorf("descriptions %d, %+v %+v %+v %+v", len(d), d[0], d[1], d[2], d[253])
	}
	if err := br.TableMod(&ofp.TableMod{Table: 254, Eviction: ofp.TableSettingOn, EvictionFlags: ^uint32(0)}); err == nil || err.Errno != ofp.TableModEPerm {
		t.Errorf("table 254: %v", err)
	}
	if err := br.TableMod(&ofp.TableMod{Table: 0, EvictionFlags: 1}); err == nil || err.Errno != ofp.TableModBadConfig {
		t.Errorf("eviction flags: %v", err)
	}
	// The setting under which OVS would send a table status govs does
	// not send is reported.
	log := &warnLog{}
	br.backer.ofLog = log
	br.TableMod(&ofp.TableMod{Table: 0, Vacancy: ofp.TableSettingOn, VacancyDown: 100, VacancyUp: 100, EvictionFlags: ^uint32(0)})
	if len(log.warns) != 1 || !strings.Contains(log.warns[0], "sends no OFPT_TABLE_STATUS") {
		t.Errorf("vacancy_down 100: warnings %q", log.warns)
	}
}

// warnLog keeps the warnings it is given.
type warnLog struct{ warns []string }

func (l *warnLog) Debugf(string, ...any) {}
func (l *warnLog) Infof(string, ...any)  {}
func (l *warnLog) Errorf(string, ...any) {}
func (l *warnLog) Warnf(format string, args ...any) {
	l.warns = append(l.warns, fmt.Sprintf(format, args...))
}
