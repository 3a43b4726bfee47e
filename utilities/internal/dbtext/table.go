package dbtext

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/govs/govs/ovsdb/db"
)

// Format is a table output format (--format).
type Format int

const (
	FormatList Format = iota
	FormatTable
	FormatHTML
	FormatCSV
	FormatJSON
)

// CellFormat is how cells holding data print (--data).
type CellFormat int

const (
	CellString CellFormat = iota
	CellBare
	CellJSON
)

// Style is the table options every utility takes (lib/table.h).
type Style struct {
	Format     Format
	Cell       CellFormat
	NoHeadings bool
	Pretty     bool
}

// ParseFormat sets the output format from a --format argument.
func (s *Style) ParseFormat(f string) error {
	switch f {
	case "table":
		s.Format = FormatTable
	case "list":
		s.Format = FormatList
	case "html":
		s.Format = FormatHTML
	case "csv":
		s.Format = FormatCSV
	case "json":
		s.Format = FormatJSON
	default:
		return fmt.Errorf("unknown output format \"%s\"", f)
	}
	return nil
}

// ParseCellFormat sets the cell format from a --data argument.
func (s *Style) ParseCellFormat(f string) error {
	switch f {
	case "string":
		s.Cell = CellString
	case "bare":
		s.Cell = CellBare
	case "json":
		s.Cell = CellJSON
	default:
		return fmt.Errorf("unknown data format \"%s\"", f)
	}
	return nil
}

// Cell is one table cell: fixed text, a datum of a type, a value as the
// server sent it (Raw), or nothing (the zero Cell: empty text, JSON null).
type Cell struct {
	Text    string
	HasText bool
	Datum   db.Datum
	Type    *db.ColumnType // nil for a text cell
	Raw     json.RawMessage
}

// DatumCell returns a cell holding d.
func DatumCell(d db.Datum, t *db.ColumnType) Cell { return Cell{Datum: d, Type: t} }

// JSONCell returns a cell holding a value as the server sent it: it prints
// as a datum of type t where it parses as one, else as its JSON, as OVS's
// cell_to_text does.
func JSONCell(raw json.RawMessage, t *db.ColumnType) Cell { return Cell{Raw: raw, Type: t} }

// TextCell returns a cell holding fixed text.
func TextCell(s string) Cell { return Cell{Text: s, HasText: true} }

func (c *Cell) json() []byte {
	switch {
	case c.HasText:
		return []byte(QuoteJSON(c.Text))
	case c.Raw != nil:
		return []byte(SortedJSON(c.Raw))
	case c.Type == nil:
		return []byte("null")
	}
	return db.AppendDatumJSON(nil, c.Datum, c.Type.IsMap())
}

func (c *Cell) text(st *Style) string {
	if c.HasText || (c.Type == nil && c.Raw == nil) {
		return c.Text
	}
	if c.Raw != nil {
		if st.Cell == CellJSON || c.Type == nil {
			return SortedJSON(c.Raw)
		}
		d, err := db.ParseDatum(c.Type, c.Raw, nil)
		if err != nil {
			return SortedJSON(c.Raw)
		}
		if st.Cell == CellBare {
			return DatumBare(d, c.Type)
		}
		return DatumString(d, c.Type)
	}
	switch st.Cell {
	case CellJSON:
		return string(c.json())
	case CellBare:
		return DatumBare(c.Datum, c.Type)
	}
	return DatumString(c.Datum, c.Type)
}

// Table is a table of cells with column headings.
type Table struct {
	// Timestamp, if set, is printed above the caption ("time" in JSON).
	Timestamp string
	Caption   string
	Headings  []string
	Rows      [][]Cell
}

// Printer prints tables; like OVS, it separates the tables it prints in
// the list, table and CSV formats with a blank line.
type Printer struct {
	W     io.Writer
	Style Style
	n     int
}

// Print writes t in the printer's style.
func (p *Printer) Print(t *Table) {
	st := &p.Style
	var b bytes.Buffer
	switch st.Format {
	case FormatTable, FormatList, FormatCSV:
		if p.n > 0 {
			b.WriteByte('\n')
		}
		p.n++
	}
	if t.Timestamp != "" && st.Format != FormatJSON {
		b.WriteString(t.Timestamp + "\n")
	}
	switch st.Format {
	case FormatTable, FormatList, FormatCSV:
		if t.Caption != "" {
			b.WriteString(t.Caption + "\n")
		}
	}
	switch st.Format {
	case FormatTable:
		widths := make([]int, len(t.Headings))
		for x, h := range t.Headings {
			if !st.NoHeadings {
				widths[x] = len(h)
			}
			for y := range t.Rows {
				widths[x] = max(widths[x], len(t.Rows[y][x].text(st)))
			}
		}
		line := func(cells []string) {
			var l strings.Builder
			for x, c := range cells {
				if x > 0 {
					l.WriteByte(' ')
				}
				if x == len(cells)-1 {
					// OVS leaves the last column unpadded.
					l.WriteString(c)
				} else {
					fmt.Fprintf(&l, "%-*s", widths[x], c)
				}
			}
			// OVS trims every line's trailing spaces.
			b.WriteString(strings.TrimRight(l.String(), " ") + "\n")
		}
		if !st.NoHeadings {
			line(t.Headings)
			dashes := make([]string, len(widths))
			for x, w := range widths {
				dashes[x] = strings.Repeat("-", w)
			}
			line(dashes)
		}
		for _, r := range t.Rows {
			cells := make([]string, len(r))
			for x := range r {
				cells[x] = r[x].text(st)
			}
			line(cells)
		}
	case FormatList:
		for y, r := range t.Rows {
			if y > 0 {
				b.WriteByte('\n')
			}
			for x := range r {
				if !st.NoHeadings {
					fmt.Fprintf(&b, "%-20s: ", t.Headings[x])
				}
				b.WriteString(r[x].text(st) + "\n")
			}
		}
	case FormatCSV:
		if !st.NoHeadings {
			for x, h := range t.Headings {
				if x > 0 {
					b.WriteByte(',')
				}
				b.WriteString(csvCell(h))
			}
			b.WriteByte('\n')
		}
		for _, r := range t.Rows {
			for x := range r {
				if x > 0 {
					b.WriteByte(',')
				}
				b.WriteString(csvCell(r[x].text(st)))
			}
			b.WriteByte('\n')
		}
	case FormatHTML:
		b.WriteString("<table border=1>\n")
		if t.Caption != "" {
			htmlCell(&b, "caption", t.Caption)
		}
		if !st.NoHeadings {
			b.WriteString("  <tr>\n")
			for _, h := range t.Headings {
				htmlCell(&b, "th", h)
			}
			b.WriteString("  </tr>\n")
		}
		for _, r := range t.Rows {
			b.WriteString("  <tr>\n")
			for x := range r {
				content := r[x].text(st)
				if t.Headings[x] == "_uuid" {
					b.WriteString("    <td><a name=\"")
					htmlEscape(&b, content)
					b.WriteString("\">")
					htmlEscape(&b, content[:min(8, len(content))])
					b.WriteString("</a></td>\n")
				} else {
					htmlCell(&b, "td", content)
				}
			}
			b.WriteString("  </tr>\n")
		}
		b.WriteString("</table>\n")
	case FormatJSON:
		// Keys sorted, as OVS serializes with JSSF_SORT.
		var j bytes.Buffer
		j.WriteByte('{')
		if t.Caption != "" {
			j.WriteString(`"caption":` + QuoteJSON(t.Caption) + ",")
		}
		j.WriteString(`"data":[`)
		for y, r := range t.Rows {
			if y > 0 {
				j.WriteByte(',')
			}
			j.WriteByte('[')
			for x := range r {
				if x > 0 {
					j.WriteByte(',')
				}
				j.Write(r[x].json())
			}
			j.WriteByte(']')
		}
		j.WriteString(`],"headings":[`)
		for x, h := range t.Headings {
			if x > 0 {
				j.WriteByte(',')
			}
			j.WriteString(QuoteJSON(h))
		}
		j.WriteByte(']')
		if t.Timestamp != "" {
			j.WriteString(`,"time":` + QuoteJSON(t.Timestamp))
		}
		j.WriteByte('}')
		if st.Pretty {
			b.WriteString(PrettyJSON(j.Bytes()))
		} else {
			b.Write(j.Bytes())
		}
		b.WriteByte('\n')
	}
	p.W.Write(b.Bytes())
}

// SortedJSON re-encodes raw compactly with object keys sorted, as OVS
// serializes with JSSF_SORT; raw that does not parse is returned as is.
func SortedJSON(raw []byte) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return string(raw)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}

func csvCell(s string) string {
	if !strings.ContainsAny(s, "\n\",") {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

func htmlEscape(b *bytes.Buffer, s string) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '"':
			b.WriteString("&quot;")
		default:
			b.WriteByte(c)
		}
	}
}

// htmlCell writes one cell, linking every UUID in it to its row.
func htmlCell(b *bytes.Buffer, elem, content string) {
	fmt.Fprintf(b, "    <%s>", elem)
	for p := 0; p < len(content); {
		if len(content)-p >= 36 {
			if _, err := db.ParseUUID(content[p : p+36]); err == nil {
				fmt.Fprintf(b, "<a href=\"#%s\">%s</a>", content[p:p+36], content[p:p+8])
				p += 36
				continue
			}
		}
		htmlEscape(b, content[p:p+1])
		p++
	}
	fmt.Fprintf(b, "</%s>\n", elem)
}

// PrettyJSON indents compact JSON as OVS's JSSF_PRETTY does: every member
// and element on its own line, two spaces a level, closing brackets right
// after the last element.
func PrettyJSON(compact []byte) string {
	var b strings.Builder
	depth := 0
	indent := func() {
		b.WriteByte('\n')
		b.WriteString(strings.Repeat("  ", depth))
	}
	for i := 0; i < len(compact); i++ {
		switch c := compact[i]; c {
		case '"':
			j := i + 1
			for j < len(compact) && compact[j] != '"' {
				if compact[j] == '\\' {
					j++
				}
				j++
			}
			b.Write(compact[i : j+1])
			i = j
		case '[', '{':
			b.WriteByte(c)
			if i+1 < len(compact) && (compact[i+1] == ']' || compact[i+1] == '}') {
				b.WriteByte(compact[i+1])
				i++
				continue
			}
			depth++
			indent()
		case ']', '}':
			depth--
			b.WriteByte(c)
		case ',':
			b.WriteByte(',')
			indent()
		case ':':
			b.WriteString(": ")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
