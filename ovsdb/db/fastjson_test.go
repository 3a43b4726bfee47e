package db

import (
	"bytes"
	"encoding/json"
	"reflect"
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
