package dbtext

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/govs/govs/ovsdb/db"
)

// TestPrintMonitorCells checks the cells monitor prints as OVS's
// lib/table.c does: a missing cell is empty (JSON null, and trailing
// spaces trimmed in a table), a value that is not a datum of its type
// prints as its JSON, and --timestamp goes above the caption.
func TestPrintMonitorCells(t *testing.T) {
	set := db.ColumnType{Key: db.BaseType{Type: db.TypeInteger}, Min: 1, Max: 1}
	tb := &Table{Timestamp: "2026-12-01 18:00:00.000", Caption: "T", Headings: []string{"row", "action", "c"},
		Rows: [][]Cell{
			{TextCell("u"), TextCell("old"), {}},
			{TextCell(""), TextCell("new"), JSONCell(json.RawMessage(`["set",[1,2]]`), &set)},
			{TextCell(""), TextCell("new"), JSONCell(json.RawMessage(`7`), &set)},
		}}
	for _, tc := range []struct {
		f    Format
		want string
	}{
		{FormatTable, "2026-12-01 18:00:00.000\nT\nrow action c\n--- ------ -------------\nu   old\n    new    [\"set\",[1,2]]\n    new    7\n"},
		{FormatJSON, `{"caption":"T","data":[["u","old",null],["","new",["set",[1,2]]],["","new",7]],"headings":["row","action","c"],"time":"2026-12-01 18:00:00.000"}` + "\n"},
	} {
		var b bytes.Buffer
		p := &Printer{W: &b, Style: Style{Format: tc.f}}
		p.Print(tb)
		if b.String() != tc.want {
			t.Errorf("format %d:\n%q\nwant\n%q", tc.f, b.String(), tc.want)
		}
	}
}
