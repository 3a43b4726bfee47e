package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ovsdbTxnSchema exercises constraints, references and garbage collection:
// A is the root table, B is collected when unreferenced, X has a column of
// each kind of constraint.
const ovsdbTxnSchema = `{"name":"T","version":"1.0.0","tables":{
 "A":{"isRoot":true,"columns":{"name":{"type":"string"},"n":{"type":{"key":{"type":"integer","minInteger":1}}},
  "ref":{"type":{"key":{"type":"uuid","refTable":"B"},"min":0,"max":1}},"s":{"type":{"key":"integer","min":0,"max":2}}}},
 "B":{"columns":{"self":{"type":{"key":{"type":"uuid","refTable":"B"},"min":0,"max":1}},"x":{"type":"integer"}}},
 "X":{"isRoot":true,"columns":{"r":{"type":{"key":{"type":"integer","minInteger":1,"maxInteger":10}}},
  "mx":{"type":{"key":{"type":"integer","maxInteger":10},"min":0,"max":1}},
  "f":{"type":{"key":{"type":"real","minReal":1.5},"min":0,"max":1}},
  "fr":{"type":{"key":{"type":"real","minReal":1.5,"maxReal":2.5},"min":0,"max":1}},
  "fm":{"type":{"key":{"type":"real","maxReal":2.5},"min":0,"max":1}},
  "str":{"type":{"key":{"type":"string","minLength":2,"maxLength":3},"min":0,"max":1}},
  "s13":{"type":{"key":"integer","min":1,"max":3}},
  "su":{"type":{"key":"string","min":0,"max":"unlimited"}},
  "s1u":{"type":{"key":"string","min":1,"max":"unlimited"}},
  "m":{"type":{"key":"string","value":"integer","min":0,"max":2}},
  "m12":{"type":{"key":"string","value":"integer","min":1,"max":2}}}}
}}`

// ovsdbTxnCases are transactions run in order on both servers; each
// answer, uuids aside, must be Debian's. Selects sort their rows (the
// "sort" extension) since servers return them in hash order.
var ovsdbTxnCases = []string{
	`{"op":"insert","table":"A","row":{"name":"a1","n":1}},{"op":"insert","table":"A","row":{"name":"a2","n":2,"s":["set",[1]]}}`,
	`{"op":"select","table":"A","where":[],"columns":["name"],"sort":["name"]}`,
	`{"op":"select","table":"A","where":[],"columns":["name","n"],"sort":["s","n"]}`,
	`{"op":"select","table":"A","where":[["name","==","a1"]],"columns":["name"],"sort":[]}`,
	`{"op":"select","table":"A","where":[],"columns":["name"],"sort":["-name"]}`,
	`{"op":"select","table":"A","where":[],"columns":["name"],"sort":[1]}`,
	`{"op":"select","table":"A","where":[],"columns":["name"],"sort":["name","name"]}`,
	`{"op":"select","table":"A","where":[],"columns":["name"],"sort":"name"}`,
	`{"op":"update","table":"A","where":[],"row":{"n":1},"sort":["name"]}`,
	`{"op":"select","table":"A","where":[],"columns":[1]}`,
	`{"op":"select","table":"A","where":[],"columns":["name","name"]}`,
	`{"op":"select","table":"A","where":[],"columns":["nope"]}`,
	`{"op":"select","table":"A","where":[],"columns":"name"}`,
	`{"op":"wait","table":"A","where":[],"columns":["nope"],"until":"==","rows":[],"timeout":0}`,
	`{"op":"insert","table":"A","row":{}}`,
	`{"op":"insert","table":"A","row":{"name":"q"}},{"op":"comment","comment":"x"}`,
	`{"op":"insert","table":"A","row":{"n":-1}}`,
	`{"op":"update","table":"A","where":[["name","==","a1"]],"row":{"n":0}}`,
	`{"op":"mutate","table":"A","where":[["name","==","a2"]],"mutations":[["n","-=",5]]}`,
	`{"op":"insert","table":"B","row":{"self":["named-uuid","me"]},"uuid-name":"me"}`,
	`{"op":"insert","table":"B","row":{"x":71,"self":["named-uuid","b"]},"uuid-name":"a"},{"op":"insert","table":"B","row":{"x":72,"self":["named-uuid","a"]},"uuid-name":"b"}`,
	`{"op":"insert","table":"B","row":{"x":81,"self":["named-uuid","b"]},"uuid-name":"b"},{"op":"insert","table":"A","row":{"n":1,"name":"keep","ref":["named-uuid","b"]}}`,
	`{"op":"select","table":"B","where":[],"columns":["x"],"sort":["x"]}`,
	`{"op":"update","table":"A","where":[["name","==","keep"]],"row":{"ref":["set",[]]}}`,
	`{"op":"select","table":"B","where":[],"columns":["x"],"sort":["x"]}`,
	`{"op":"insert","table":"B","uuid":"11111111-1111-1111-1111-111111111111","row":{"x":1}},{"op":"insert","table":"B","uuid":"11111111-1111-1111-1111-111111111111","row":{"x":1}}`,
	`{"op":"insert","table":"A","row":{"n":1,"s":["set",[1,2,3]]}}`,
	`{"op":"insert","table":"A","row":{"n":1,"s":["set",[1,1]]}}`,
	`{"op":"update","table":"A","where":[],"row":{"s":["set",[1,2,3]]}}`,
	`{"op":"mutate","table":"A","where":[["name","==","a2"]],"mutations":[["s","insert",["set",[7,8]]]]}`,
	`{"op":"select","table":"A","where":[["s","==",["set",[2,2]]]]}`,
	`{"op":"insert","table":"X","row":{}}`,
	`{"op":"insert","table":"X","row":{"r":11}}`,
	`{"op":"insert","table":"X","row":{"r":1,"mx":11}}`,
	`{"op":"insert","table":"X","row":{"r":1,"f":1.25}}`,
	`{"op":"insert","table":"X","row":{"r":1,"fr":3}}`,
	`{"op":"insert","table":"X","row":{"r":1,"fm":3.75}}`,
	`{"op":"insert","table":"X","row":{"r":1,"str":"a"}}`,
	`{"op":"insert","table":"X","row":{"r":1,"str":"abcd"}}`,
	`{"op":"insert","table":"X","row":{"r":1,"s13":["set",[1,2,3,4]]}}`,
	`{"op":"insert","table":"X","row":{"r":1,"s13":["set",[]]}}`,
	`{"op":"insert","table":"X","row":{"r":1,"s13":1,"s1u":["set",[]]}}`,
	`{"op":"insert","table":"X","row":{"r":1,"s13":1,"s1u":"a","m12":["map",[]]}}`,
	`{"op":"insert","table":"X","row":{"r":1,"s13":1,"s1u":"a","m12":["map",[["a",1]]],"m":["map",[["a",1],["b",2],["c",3]]]}}`,
	`{"op":"insert","table":"X","row":{"r":1,"s13":1,"s1u":"a","m12":["map",[["a",1]]],"m":["map",[["a",1],["a",2]]]}}`,
	`{"op":"insert","table":"X","row":{"r":1,"s13":1,"s1u":"a","m12":["map",[["a",1]]],"su":["set",["a","a"]]}}`,
	`{"op":"insert","table":"X","row":{"r":1}}`,
	`{"op":"mutate","table":"X","where":[],"mutations":[["s13","insert",["set",[5,6,7]]]]}`,
	`{"op":"mutate","table":"X","where":[],"mutations":[["s13","delete",["set",[0]]]]}`,
	`{"op":"mutate","table":"X","where":[],"mutations":[["m12","delete",["set",[""]]]]}`,
	`{"op":"mutate","table":"X","where":[],"mutations":[["m","insert",["map",[["x",1],["y",2],["z",3]]]]]}`,
	`{"op":"mutate","table":"X","where":[],"mutations":[["su","insert",["set",["a","a"]]]]}`,
	`{"op":"mutate","table":"X","where":[],"mutations":[["r","+=",20]]}`,
	`{"op":"mutate","table":"X","where":[],"mutations":[["mx","insert",["set",[20]]]]}`,
	// A row the transaction changes keeps its reference to a row the
	// transaction deletes: OVS reports the deletion, as it checks only
	// the references a transaction adds.
	`{"op":"insert","table":"B","row":{"x":91},"uuid-name":"b"},{"op":"insert","table":"A","row":{"n":1,"name":"holder","ref":["named-uuid","b"]}}`,
	`{"op":"update","table":"A","where":[["name","==","holder"]],"row":{"n":2}},{"op":"delete","table":"B","where":[["x","==",91]]}`,
	`{"op":"insert","table":"B","row":{"x":92},"uuid-name":"b"},{"op":"update","table":"A","where":[["name","==","holder"]],"row":{"ref":["named-uuid","b"]}},{"op":"delete","table":"B","where":[["x","==",92]]}`,
	`{"op":"select","table":"B","where":[],"columns":["x"],"sort":["x"]}`,
}

// TestOvsdbTransactDifferential sends the same transactions with Debian's
// ovsdb-client to Debian's ovsdb-server and govs' and requires the same
// answers: results, error names, details and syntax.
func TestOvsdbTransactDifferential(t *testing.T) {
	sch := filepath.Join(t.TempDir(), "t.ovsschema")
	if err := os.WriteFile(sch, []byte(ovsdbTxnSchema), 0o644); err != nil {
		t.Fatal(err)
	}
	var servers []*ovsdbProc
	for _, kind := range []string{"debian", "govs"} {
		p, out, code := ovsdbStartOnce(t, kind, sch)
		if code != 0 {
			t.Fatalf("%s ovsdb-server: exit %d: %s", kind, code, out)
		}
		servers = append(servers, p)
	}
	for _, c := range ovsdbTxnCases {
		var out [2]string
		for i, p := range servers {
			r := p.client("transact", "unix:"+p.sock, `["T",`+c+`]`)
			out[i] = ovsdbNormalize(r.stdout+r.stderr, false)
		}
		if out[0] != out[1] {
			t.Errorf("transact %s\ndebian: %s\ngovs:   %s", c, out[0], out[1])
		}
	}
	// Rows inserted by one transaction each have their own _version.
	for _, p := range servers {
		r := p.client("transact", "unix:"+p.sock, `["T",{"op":"insert","table":"A","row":{"name":"v1","n":1}},`+
			`{"op":"insert","table":"A","row":{"name":"v2","n":1}},{"op":"select","table":"A","where":[["name","==","v1"]],"columns":["_version"]},`+
			`{"op":"select","table":"A","where":[["name","==","v2"]],"columns":["_version"]}]`)
		var res []map[string]any
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || len(res) != 4 {
			t.Fatalf("%s: _version transaction: %s %s", p.kind, r.stdout, r.stderr)
		}
		v1, _ := json.Marshal(res[2]["rows"])
		v2, _ := json.Marshal(res[3]["rows"])
		if string(v1) == string(v2) || strings.Contains(string(v1), "00000000-0000") {
			t.Errorf("%s: two inserted rows' _version: %s %s", p.kind, v1, v2)
		}
	}
}
