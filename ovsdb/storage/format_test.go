package storage

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// utf8Fixed is s with each byte that is not part of valid UTF-8 replaced
// by U+FFFD, as a record's strings are written.
func utf8Fixed(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		b.WriteRune(r) // RuneError for a bad byte
		i += size
	}
	return b.String()
}

// TestMarshalRecordStrings: a record's comment and names come out as JSON
// strings that read back as given, escaped as OVS's json.c escapes them.
func TestMarshalRecordStrings(t *testing.T) {
	comment := "ovn-nbctl: lsp-add sw0 \"p1\" -- acl-add sw0 to-lport 1000 'ip4.src==10.0.0.1' a\\b\ttab\x01 <&> \u2028 \xff"
	body, err := marshalRecord(&Record{Date: 1, Comment: comment,
		Tables: map[string]map[string]json.RawMessage{"T\"x": {"id\n": json.RawMessage(`{"a": 1}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"T\"x":{"id\n":{"a":1}},"_date":1,"_comment":"ovn-nbctl: lsp-add sw0 \"p1\" -- acl-add sw0 to-lport 1000 'ip4.src==10.0.0.1' a\\b\ttab\u0001 <&> ` + "\u2028" + ` \ufffd"}` + "\n"
	if string(body) != want {
		t.Errorf("record:\n%s\nwant:\n%s", body, want)
	}
	var back struct {
		Comment string `json:"_comment"`
	}
	if err := json.Unmarshal(body, &back); err != nil || back.Comment != utf8Fixed(comment) {
		t.Errorf("comment read back as %q (%v), want %q", back.Comment, err, utf8Fixed(comment))
	}
}

// TestMarshalRecordCompact: rows the caller says are compact are written
// as they are, with the same body as rows compacted; a row that is not an
// object or null is refused either way.
func TestMarshalRecordCompact(t *testing.T) {
	loose := &Record{Date: 1, Tables: map[string]map[string]json.RawMessage{"T": {"a": json.RawMessage(`{"x": [ "set", [] ]}`), "b": nil}}}
	compact := &Record{Date: 1, Compact: true, Tables: map[string]map[string]json.RawMessage{"T": {"a": json.RawMessage(`{"x":["set",[]]}`), "b": nil}}}
	b1, err1 := marshalRecord(loose)
	b2, err2 := marshalRecord(compact)
	if err1 != nil || err2 != nil || string(b1) != string(b2) || string(b2) != `{"T":{"a":{"x":["set",[]]},"b":null},"_date":1}`+"\n" {
		t.Errorf("loose %s (%v), compact %s (%v)", b1, err1, b2, err2)
	}
	compact.Tables["T"]["a"] = json.RawMessage(`[1]`)
	if _, err := marshalRecord(compact); err == nil {
		t.Error("a compact row that is an array was written")
	}
}

// FuzzMarshalRecordComment: any comment makes a record whose body is one
// line of valid JSON with the comment in it, bad UTF-8 bytes replaced.
func FuzzMarshalRecordComment(f *testing.F) {
	f.Add("plain")
	f.Add("ovn-nbctl: ls-add \"sw0\" -- a\\b\n\x00\x7f\u2028\xc3")
	f.Fuzz(func(t *testing.T, comment string) {
		if comment == "" {
			return
		}
		body, err := marshalRecord(&Record{Date: 1, Comment: comment})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Count(string(body), "\n") != 1 || body[len(body)-1] != '\n' {
			t.Fatalf("body is not one line: %q", body)
		}
		var back struct {
			Comment string `json:"_comment"`
		}
		if err := json.Unmarshal(body, &back); err != nil || back.Comment != utf8Fixed(comment) {
			t.Fatalf("comment %q read back as %q (%v)", comment, back.Comment, err)
		}
	})
}

// BenchmarkMarshalRecordComment is a 200-command ovn-nbctl transaction's
// record: its comment, the whole command line with quotes in it, and 200
// small rows.
func BenchmarkMarshalRecordComment(b *testing.B) {
	rows := map[string]json.RawMessage{}
	var cmd strings.Builder
	cmd.WriteString("ovn-nbctl:")
	for i := range 200 {
		rows[strings.Repeat("0", 8)+"-0000-0000-0000-"+strings.Repeat("0", 9)+string(rune('a'+i%26))+string(rune('a'+i/26))] =
			json.RawMessage(`{"name":"sw1-p1","addresses":["set",["00:00:00:00:01:01 10.1.0.1"]]}`)
		cmd.WriteString(` -- lsp-set-addresses sw1-p1 "00:00:00:00:01:01 10.1.0.1"`)
	}
	// Compact, as the server's records of commits are.
	r := &Record{Date: 1, Comment: cmd.String(), Tables: map[string]map[string]json.RawMessage{"Logical_Switch_Port": rows}, Compact: true}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := marshalRecord(r); err != nil {
			b.Fatal(err)
		}
	}
}
