package ofp

import (
	"encoding/binary"
	"testing"
)

func tableModMsg(v Version, table uint8, config uint32, props ...byte) []byte {
	b := []byte{byte(v), type11TableMod, 0, 0, 0, 0, 0, 9, table, 0, 0, 0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[12:], config)
	b = append(b, props...)
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	return b
}

// OFPT_TABLE_MOD decodes as OVS's ofputil_decode_table_mod: the miss
// behaviour only in 1.1 and 1.2, eviction and vacancy from 1.4 with their
// properties, and OVS's errors for bad ones.
func TestDecodeTableMod(t *testing.T) {
	evict := []byte{0, 2, 0, 8, 0, 0, 0, 7}
	vacancy := func(down, up, now byte) []byte { return []byte{0, 3, 0, 8, down, up, now, 0} }
	for _, tc := range []struct {
		name string
		b    []byte
		want TableMod
		err  Errno
	}{
		{"1.1 continue", tableModMsg(V11, 1, 1), TableMod{Table: 1, Miss: TableMissContinue, EvictionFlags: ^uint32(0)}, 0},
		{"1.2 drop", tableModMsg(V12, 2, 2), TableMod{Table: 2, Miss: TableMissDrop, EvictionFlags: ^uint32(0)}, 0},
		{"1.2 undefined", tableModMsg(V12, 2, 3), TableMod{Table: 2, Miss: TableMissController, EvictionFlags: ^uint32(0)}, 0},
		{"1.3 ignores miss", tableModMsg(V13, 3, 2), TableMod{Table: 3, EvictionFlags: ^uint32(0)}, 0},
		{"1.4 evict", tableModMsg(V14, 0, 4, evict...), TableMod{Eviction: TableSettingOn, Vacancy: TableSettingOff, EvictionFlags: 7}, 0},
		{"1.5 vacancy", tableModMsg(V15, 0xff, 8, vacancy(20, 80, 0)...),
			TableMod{Table: 0xff, Eviction: TableSettingOff, Vacancy: TableSettingOn, EvictionFlags: ^uint32(0), VacancyDown: 20, VacancyUp: 80}, 0},
		{"vacancy down > up", tableModMsg(V14, 0, 8, vacancy(80, 20, 0)...), TableMod{}, BadPropValue},
		{"vacancy > 100", tableModMsg(V14, 0, 8, vacancy(20, 101, 0)...), TableMod{}, BadPropValue},
		{"vacancy now", tableModMsg(V14, 0, 8, vacancy(20, 80, 5)...), TableMod{}, BadPropValue},
		{"short property", tableModMsg(V14, 0, 0, 0, 2, 0, 6, 0, 0, 0, 0), TableMod{}, BadAsyncLen},
		{"unknown property", tableModMsg(V14, 0, 0, 0, 9, 0, 8, 0, 0, 0, 0), TableMod{}, BadType},
		{"1.1 long", tableModMsg(V11, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), TableMod{}, BadLen},
	} {
		m, err := Decode(tc.b)
		if tc.err != 0 {
			if e, ok := err.(*Error); !ok || e.Errno != tc.err {
				t.Errorf("%s: %v, want %s", tc.name, err, tc.err)
			}
			continue
		}
		tm, ok := m.(*TableMod)
		if err != nil || !ok {
			t.Errorf("%s: %v %T", tc.name, err, m)
			continue
		}
		tc.want.Header = tm.Header
		if *tm != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, *tm, tc.want)
		}
	}
}
