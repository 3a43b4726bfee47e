package ofproto

import (
	"strings"
)

// traceKind is the kind of an ofproto/trace line (OVS's
// oftrace_node_type): it decides the line's prefix and, with its place
// among its siblings, its indentation.
type traceKind uint8

const (
	traceAction traceKind = iota
	traceDetail           // " -> "
	traceWarn             // " >> "
	traceError            // " >>>> ... <<<<" (the text has the tail)
	traceBucket
	traceBridge
	traceTable
	traceThaw
)

// terminal is OVS's oftrace_node_type_is_terminal.
func (k traceKind) terminal() bool { return k <= traceBucket }

type traceNode struct {
	kind traceKind
	text string
	subs []*traceNode
}

// traceTree is what a trace reports, as OVS's tree of oftrace_nodes: a
// line goes to the list cur points to (a node's subs, or the top).
type traceTree struct {
	top []*traceNode
	cur *[]*traceNode
}

func newTraceTree() *traceTree {
	t := &traceTree{}
	t.cur = &t.top
	return t
}

// add appends a line to the current list and returns its node.
func (t *traceTree) add(kind traceKind, text string) *traceNode {
	n := &traceNode{kind: kind, text: text}
	*t.cur = append(*t.cur, n)
	return n
}

// open appends a line and makes its node's subs the current list; the
// caller restores the list it returns when the node's part ends.
func (t *traceTree) open(kind traceKind, text string) (restore *[]*traceNode) {
	restore = t.cur
	n := t.add(kind, text)
	t.cur = &n.subs
	return restore
}

// render writes the tree as OVS's oftrace_node_print_details: a line is
// indented one step deeper when more lines follow it in its list (or it
// is terminal), and what it holds two steps deeper then.
func (t *traceTree) render(b *strings.Builder) {
	renderTrace(b, t.top, 0)
}

func renderTrace(b *strings.Builder, nodes []*traceNode, level int) {
	for i, n := range nodes {
		if n.kind == traceBridge {
			b.WriteByte('\n')
		}
		more := 0
		if i < len(nodes)-1 || n.kind.terminal() {
			more = 1
		}
		pad := strings.Repeat(" ", (level+more)*4)
		b.WriteString(pad)
		switch n.kind {
		case traceDetail:
			b.WriteString(" -> ")
		case traceWarn:
			b.WriteString(" >> ")
		case traceError:
			b.WriteString(" >>>> ")
		}
		b.WriteString(n.text)
		b.WriteByte('\n')
		if n.kind == traceBridge {
			b.WriteString(pad)
			b.WriteString(strings.Repeat("-", len(n.text)))
			b.WriteByte('\n')
		}
		renderTrace(b, n.subs, level+2*more)
	}
}
