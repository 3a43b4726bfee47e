package db

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func slowDecode(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

func TestFastDecode(t *testing.T) {
	for _, tc := range []struct {
		in   string
		fast bool
	}{
		{`{"op":"mutate","table":"Open_vSwitch","where":[],"mutations":[["external_ids","insert",["map",[["k","v"]]]]]}`, true},
		{` [1, -0.5e+3, 0, true, false, null, {}, [], "ü"] `, true},
		{`{"a":1,"a":2}`, true},
		{`"a\"b"`, true},
		{`"\u00e9"`, true},
		{`"outport == \"sw0-p1\" && x\\y\/\b\f\n\r\t\u0000\u20AC ü"`, true},
		{`[["set",["a","b"]],[[],[1,[2,[]]],"map"],{"op":"x","uuid-name":"named-uuid","opx":"sets","":""}]`, true},
		{`{"o\u0070":"s\u0065t","op":"set","table":"Open_vSwitch_","where":["==","_uuid"]}`, true},
		{`[["a"],["b",["c"]],]`, false},
		{`"\ud83d\ude00"`, false},
		{`"\udc00"`, false},
		{`"\x"`, false},
		{`"\u12"`, false},
		{`"\u12g4"`, false},
		{"\"a\\\"\xff\"", false},
		{`"a\`, false},
		{"\"\xff\"", false},
		{"\"a\tb\"", false},
		{`01`, false},
		{`1 2`, false},
		{`[1,]`, false},
		{`{"a" 1}`, false},
		{`-`, false},
		{`1.`, false},
		{`1e`, false},
		{`tru`, false},
		{``, false},
	} {
		v, ok := fastDecode([]byte(tc.in))
		if ok != tc.fast {
			t.Errorf("%q: fast path %v, want %v", tc.in, ok, tc.fast)
			continue
		}
		if ok {
			want, err := slowDecode([]byte(tc.in))
			if err != nil || !reflect.DeepEqual(v, want) {
				t.Errorf("%q: %#v, encoding/json: %#v (%v)", tc.in, v, want, err)
			}
		}
	}
}

// FuzzFastDecode checks that whatever the fast path accepts decodes to
// exactly what encoding/json gives.
func FuzzFastDecode(f *testing.F) {
	for _, s := range []string{`{"a":[1,"x",true,null,-2.5E-3]}`, `[]`, `"\u0041"`, `"a\"b\\c\ud800"`, `[[[[]]]]`, `{"a":{"b":{}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		v, ok := fastDecode(raw)
		if !ok {
			return
		}
		want, err := slowDecode(raw)
		if err != nil {
			t.Fatalf("%q: fast path accepted what encoding/json refuses: %v", raw, err)
		}
		if !reflect.DeepEqual(v, want) {
			t.Fatalf("%q: %#v, encoding/json: %#v", raw, v, want)
		}
	})
}

// BenchmarkFastDecodeOp: an ovs-vsctl-like mutate operation; arrays are
// allocated once at their size and the operations' names and keywords
// not at all.
func BenchmarkFastDecodeOp(b *testing.B) {
	raw := []byte(`{"op":"mutate","table":"Open_vSwitch","where":[],"mutations":[["external_ids","delete",["set",["k"]]],["external_ids","insert",["map",[["k","v"]]]]]}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := fastDecode(raw); !ok {
			b.Fatal("slow path")
		}
	}
}

// slowDecodeOp is the general path's view of an operation: what
// fastDecodeOp must give whenever it takes one.
func slowDecodeOp(raw []byte) (*opRequest, bool) {
	v, err := slowDecode(raw)
	m, ok := v.(map[string]any)
	if err != nil || !ok {
		return nil, false
	}
	op, bad := decodeOp(m)
	allowed, known := opMembers[op.Op]
	if bad != "" || !known {
		return nil, false
	}
	for name := range m {
		if name != "op" && !strings.Contains(allowed, " "+name+" ") {
			return nil, false
		}
	}
	return op, true
}

func TestFastDecodeOp(t *testing.T) {
	for _, tc := range []struct {
		in   string
		fast bool
	}{
		{`{"op":"mutate","table":"Open_vSwitch","where":[],"mutations":[["external_ids","insert",["map",[["k","v"]]]]]}`, true},
		{` {"table":"Bridge","op":"insert","row":{"name":"br0"},"uuid-name":"row1","uuid":"00000000-0000-0000-0000-000000000001"} `, true},
		{`{"op":"select","table":"Bridge","where":[["name","==","br0"]],"columns":["name"],"sort":["name"]}`, true},
		{`{"op":"wait","table":"Bridge","where":[],"columns":["name"],"until":"==","rows":[],"timeout":0}`, true},
		{`{"op":"commit","durable":false}`, true},
		{`{"op":"comment","comment":"x"}`, true},
		{`{"op":"assert","lock":"l"}`, true},
		{`{"op":"abort"}`, true},
		{`{"op":"update","table":"Bridge","where":[],"row":null}`, true}, // missing row: prepareOp's error
		{`{"op":"comment","comment":"a","comment":"b"}`, false},          // named twice
		{`{"op":"delete","table":"Bridge","where":[],"row":{}}`, false},  // not allowed here
		{`{"op":"insert","table":5,"row":{}}`, false},                    // type mismatch
		{`{"op":"select","table":"Bridge","where":[],"columns":{}}`, false},
		{`{"op":"wait","table":"B","where":[],"until":"==","rows":[],"timeout":"1"}`, false},
		{`{"op":"commit","durable":1}`, false},
		{`{"op":"frobnicate"}`, false},
		{`{"table":"Bridge"}`, false},
		{`{"op":"comment","comment":"a","x":1}`, false},
		{`[{"op":"abort"}]`, false},
		{`{"op":"comment","comment":"\ud800"}`, false},
		{`{"op":"abort"} x`, false},
		{`{"op":"abort"`, false},
	} {
		op, ok := fastDecodeOp([]byte(tc.in))
		if ok != tc.fast {
			t.Errorf("%s: fast path %v, want %v", tc.in, ok, tc.fast)
			continue
		}
		if want, _ := slowDecodeOp([]byte(tc.in)); ok && !reflect.DeepEqual(op, want) {
			t.Errorf("%s: %+v, general path %+v", tc.in, op, want)
		}
	}
}

// FuzzFastDecodeOp checks that whatever operation the fast path takes, the
// general path (encoding/json, decodeOp, the members check) takes too, with
// the same members.
func FuzzFastDecodeOp(f *testing.F) {
	for _, s := range []string{
		`{"op":"mutate","table":"Open_vSwitch","where":[],"mutations":[["external_ids","delete",["set",["k"]]]]}`,
		`{"op":"insert","table":"Bridge","row":{"name":"br0","ports":["set",[["named-uuid","p"]]]},"uuid-name":"b"}`,
		`{"op":"wait","table":"Bridge","where":[],"columns":["name"],"until":"!=","rows":[{}],"timeout":1.5e3}`,
		`{"op":"select","table":"Bridge","where":[],"sort":["name"]}`,
		`{"op":"commit","durable":true}`, `{"op":"assert","lock":"x"}`, `{"op":"comment","comment":"\u00e9\n"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		op, ok := fastDecodeOp(raw)
		if !ok {
			return
		}
		want, ok := slowDecodeOp(raw)
		if !ok {
			t.Fatalf("%q: fast path took what the general path refuses", raw)
		}
		if !reflect.DeepEqual(op, want) {
			t.Fatalf("%q: %+v, general path %+v", raw, op, want)
		}
	})
}

// BenchmarkFastDecodeOpMembers: the same operation as BenchmarkFastDecodeOp,
// decoded into its members as Transact does.
func BenchmarkFastDecodeOpMembers(b *testing.B) {
	raw := []byte(`{"op":"mutate","table":"Open_vSwitch","where":[],"mutations":[["external_ids","delete",["set",["k"]]],["external_ids","insert",["map",[["k","v"]]]]]}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := fastDecodeOp(raw); !ok {
			b.Fatal("slow path")
		}
	}
}
