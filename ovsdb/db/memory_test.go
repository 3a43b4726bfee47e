package db

import "testing"

// TestUsage counts as ovsdb-server's memory/show: cells with _uuid and
// _version, two atoms per map pair, weak references to other rows only.
func TestUsage(t *testing.T) {
	s, err := ParseSchema([]byte(`{"name":"M","version":"1.0.0","tables":{"T":{"columns":{
		"name":{"type":"string"},
		"m":{"type":{"key":"string","value":"string","min":0,"max":"unlimited"}},
		"s":{"type":{"key":"integer","min":0,"max":"unlimited"}},
		"w":{"type":{"key":{"type":"uuid","refTable":"T","refType":"weak"},"min":0,"max":"unlimited"}}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	d := New(s)
	if u := d.Usage(); u != (Usage{}) {
		t.Fatalf("empty: %+v", u)
	}
	res := tx(t, d, `[{"op":"insert","table":"T","uuid-name":"a","row":{"name":"a","m":["map",[["k","v"],["x","y"]]],"s":["set",[1,2,3]]}},
		{"op":"insert","table":"T","uuid-name":"b","row":{"name":"b","w":["set",[["named-uuid","a"],["named-uuid","b"]]]}}]`)
	if e := lastError(res); e != "" {
		t.Fatal(e)
	}
	// Row a: _uuid, _version, name, 2 pairs, 3 keys = 10; row b: _uuid,
	// _version, name, 2 refs = 5. Only b -> a is a weak reference: b -> b
	// refers to itself.
	if u, want := d.Usage(), (Usage{Cells: 2 * 6, Atoms: 15, WeakRefs: 1}); u != want {
		t.Errorf("got %+v, want %+v", u, want)
	}
}
