package ofp

import (
	"bytes"
	"reflect"
	"testing"
	"unsafe"
)

// TestActionsKey sets each field of an Action in turn: the key must
// change (or the list not be keyed, for the arguments behind pointers),
// so that a field added to Action and not to its key fails here.
func TestActionsKey(t *testing.T) {
	zero, ok := AppendActionsKey(nil, []Action{{}})
	if !ok {
		t.Fatal("a zero action is not keyed")
	}
	unkeyed := map[string]bool{"CT": true, "NAT": true, "Learn": true, "Fin": true, "Multipath": true, "Bundle": true}
	typ := reflect.TypeFor[Action]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		for _, empty := range []bool{false, true} {
			if empty && f.Type.Kind() != reflect.Slice {
				continue
			}
			acts := []Action{{}}
			v := reflect.ValueOf(&acts[0]).Elem().Field(i)
			v = reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
			switch v.Kind() {
			case reflect.Bool:
				v.SetBool(true)
			case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
				v.SetUint(1)
			case reflect.Int:
				v.SetInt(1)
			case reflect.String:
				v.SetString("x")
			case reflect.Pointer:
				v.Set(reflect.New(v.Type().Elem()))
			case reflect.Slice:
				n := 1
				if empty {
					n = 0
				}
				v.Set(reflect.MakeSlice(v.Type(), n, n))
			case reflect.Struct: // FieldRef
				v.Field(1).SetInt(1)
			default:
				t.Fatalf("field %s: kind %v not covered by this test", f.Name, v.Kind())
			}
			k, ok := AppendActionsKey([]byte("prefix"), acts)
			switch {
			case unkeyed[f.Name]:
				if ok || string(k) != "prefix" {
					t.Errorf("field %s set: keyed %q, want not keyed", f.Name, k)
				}
			case !ok:
				t.Errorf("field %s set (empty %v): not keyed", f.Name, empty)
			case bytes.Equal(k[len("prefix"):], zero):
				t.Errorf("field %s set (empty %v): key unchanged", f.Name, empty)
			}
		}
	}
	// Nested lists are keyed as lists: [a][b] differs from [a b].
	two, _ := AppendActionsKey(nil, []Action{{Type: ActOutput}, {Type: ActDecTTL}})
	nested, _ := AppendActionsKey(nil, []Action{{Type: ActOutput, Nested: []Action{{Type: ActDecTTL}}}})
	if bytes.Equal(two, nested) {
		t.Error("a nested list keyed as a flat one")
	}
}
