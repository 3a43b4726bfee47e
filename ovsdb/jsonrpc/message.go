// Package jsonrpc speaks JSON-RPC 1.0 the way Open vSwitch does (lib/jsonrpc.c):
// JSON objects concatenated on a byte stream with no framing, requests
// {"method","params","id"}, notifications with "id":null, replies
// {"id","result","error":null} and errors {"id","error"}. It owns the
// streaming decoder, message validation, and connections with a send queue,
// echo handling and the inactivity probe.
package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Type is the kind of a message, derived from which members it has.
type Type uint8

const (
	Request Type = iota + 1
	Notification
	Reply
	Error
)

func (t Type) String() string {
	switch t {
	case Request:
		return "request"
	case Notification:
		return "notification"
	case Reply:
		return "reply"
	case Error:
		return "error"
	}
	return "(null)"
}

// Message is one JSON-RPC message. Members that are absent or JSON null are
// nil, as in OVS (null_from_json_null).
type Message struct {
	Method string // "" if absent
	Params json.RawMessage
	Result json.RawMessage
	Error  json.RawMessage
	ID     json.RawMessage
}

// Type reports the message's kind the way OVS classifies it: a result makes
// a reply, else an error makes an error, else an id makes a request.
func (m *Message) Type() Type {
	switch {
	case m.Result != nil:
		return Reply
	case m.Error != nil:
		return Error
	case m.ID != nil:
		return Request
	}
	return Notification
}

// ErrProtocol wraps every reason a received message is rejected. OVS closes
// the connection on such errors ("received bad JSON-RPC message").
var ErrProtocol = errors.New("protocol error")

type protocolError string

func (e protocolError) Error() string        { return string(e) }
func (e protocolError) Is(target error) bool { return target == ErrProtocol }

var nullJSON = []byte("null")

func nonNull(r json.RawMessage) json.RawMessage {
	if r == nil || bytes.Equal(bytes.TrimSpace(r), nullJSON) {
		return nil
	}
	return r
}

// ParseMessage parses and validates one complete JSON value as a JSON-RPC
// message, with the checks and error texts of OVS's jsonrpc_msg_from_json.
func ParseMessage(data []byte) (*Message, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return nil, protocolError("message is not a JSON object")
	}
	if !json.Valid(data) {
		return nil, protocolError("syntax error")
	}
	return parseValid(data)
}

// parseValid is ParseMessage for a JSON object whose syntax is known to be
// valid (the decoder checked it).
func parseValid(data []byte) (*Message, error) {
	if len(data) == 0 || data[0] != '{' {
		// An array: OVS's parser takes it, its jsonrpc refuses it.
		return nil, protocolError("message is not a JSON object")
	}
	m := &Message{}
	var hasMethod bool
	var extra string
	var err error
	SplitObject(data, func(key, value []byte) {
		// Neither the names nor the method are copied or decoded
		// unless they have escapes: no allocation for them.
		name := key[1 : len(key)-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			name = []byte(unquote(key))
		}
		switch string(name) {
		case "method":
			hasMethod = true
			var ok bool
			if m.Method, ok = methodName(value); !ok {
				err = protocolError("method is not a JSON string")
			}
		case "params":
			m.Params = nonNull(value)
		case "result":
			m.Result = nonNull(value)
		case "error":
			m.Error = nonNull(value)
		case "id":
			m.ID = nonNull(value)
		default:
			if extra == "" {
				extra = string(name)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	if extra != "" {
		return nil, protocolError(fmt.Sprintf("message has unexpected member \"%s\"", extra))
	}
	if err := m.validate(hasMethod); err != nil {
		return nil, err
	}
	return m, nil
}

// unquote decodes a JSON string with escapes (valid: the decoder checked).
func unquote(raw []byte) string {
	var s string
	json.Unmarshal(raw, &s)
	return s
}

// methodName decodes a method, a JSON string (ok false for another
// value). The methods clients send all the time are constants.
func methodName(raw []byte) (string, bool) {
	if raw[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(raw, '\\') >= 0 {
		var s string
		return s, json.Unmarshal(raw, &s) == nil
	}
	b := raw[1 : len(raw)-1]
	for _, name := range commonMethods {
		if string(b) == name {
			return name, true
		}
	}
	return string(b), true
}

var commonMethods = [...]string{"transact", "echo", "update2", "update3", "update", "monitor_cond",
	"monitor_cond_since", "monitor_cond_change", "monitor_cancel", "monitor", "get_schema",
	"list_dbs", "lock", "unlock", "steal", "locked", "stolen", "cancel", "set_db_change_aware"}

// validate applies jsonrpc_msg_is_valid: params must be an array, and each
// type has exactly its members.
func (m *Message) validate(hasMethod bool) error {
	if m.Params != nil && m.Params[0] != '[' {
		return protocolError(`"params" must be JSON array`)
	}
	t := m.Type()
	var want [5]bool // method, params, result, error, id
	switch t {
	case Request:
		want = [5]bool{true, true, false, false, true}
	case Notification:
		want = [5]bool{true, true, false, false, false}
	case Reply:
		want = [5]bool{false, false, true, false, true}
	case Error:
		want = [5]bool{false, false, false, true, true}
	}
	have := [5]bool{hasMethod, m.Params != nil, m.Result != nil, m.Error != nil, m.ID != nil}
	names := [5]string{"method", "params", "result", "error", "id"}
	for i := range want {
		if have[i] != want[i] {
			not := ""
			if !want[i] {
				not = " not"
			}
			return protocolError(fmt.Sprintf("%s must%s have \"%s\"", t, not, names[i]))
		}
	}
	return nil
}

// Append appends the wire encoding of m to buf. Member order follows what
// ovsdb-server sends; clients do not depend on it.
func (m *Message) Append(buf []byte) []byte {
	if buf == nil {
		// Room for everything: a large result is copied once, not
		// grown by doubling.
		buf = make([]byte, 0, len(m.ID)+len(m.Method)+len(m.Params)+len(m.Result)+len(m.Error)+48)
	}
	buf = append(buf, `{"id":`...)
	if m.ID != nil {
		buf = append(buf, m.ID...)
	} else {
		buf = append(buf, "null"...)
	}
	if t := m.Type(); m.Method != "" || t == Request || t == Notification {
		buf = append(buf, `,"method":`...)
		buf = appendString(buf, m.Method)
	}
	if m.Params != nil {
		buf = append(buf, `,"params":`...)
		buf = append(buf, m.Params...)
	}
	switch {
	case m.Result != nil:
		buf = append(buf, `,"result":`...)
		buf = append(buf, m.Result...)
		buf = append(buf, `,"error":`...)
		if m.Error != nil {
			buf = append(buf, m.Error...)
		} else {
			buf = append(buf, "null"...)
		}
	case m.Error != nil:
		// OVS's jsonrpc_create_error makes a reply without "result".
		buf = append(buf, `,"error":`...)
		buf = append(buf, m.Error...)
	}
	return append(buf, '}')
}

// MarshalJSON implements json.Marshaler.
func (m *Message) MarshalJSON() ([]byte, error) { return m.Append(nil), nil }

func appendString(buf []byte, s string) []byte {
	// Methods are plain ASCII: quoted as they are.
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			plain = false
			break
		}
	}
	if plain {
		buf = append(buf, '"')
		buf = append(buf, s...)
		return append(buf, '"')
	}
	b, _ := json.Marshal(s)
	return append(buf, b...)
}

func mustMarshal(v any) json.RawMessage {
	if r, ok := v.(json.RawMessage); ok {
		return r
	}
	b, err := Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("jsonrpc: cannot marshal %T: %v", v, err))
	}
	return b
}

// Marshal is json.Marshal without its HTML escapes ("\u003c" for '<'),
// which OVS never writes.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// NewRequest returns a request. params must marshal to a JSON array.
func NewRequest(method string, params any, id any) *Message {
	return &Message{Method: method, Params: mustMarshal(params), ID: mustMarshal(id)}
}

// NewNotification returns a notification ("id": null).
func NewNotification(method string, params any) *Message {
	return &Message{Method: method, Params: mustMarshal(params)}
}

// NewReply returns a successful reply to the request with the given id.
func NewReply(id json.RawMessage, result any) *Message {
	r := mustMarshal(result)
	if r == nil || bytes.Equal(r, nullJSON) {
		r = json.RawMessage("{}")
	}
	return &Message{Result: r, ID: id}
}

// NewError returns an error reply; err is usually a string or an OVSDB
// error object.
func NewError(id json.RawMessage, err any) *Message {
	return &Message{Error: mustMarshal(err), ID: id}
}

// String renders the message for debug logs.
func (m *Message) String() string {
	var b bytes.Buffer
	b.WriteString(m.Type().String())
	if m.Method != "" {
		fmt.Fprintf(&b, `, method="%s"`, m.Method)
	}
	if m.Params != nil {
		fmt.Fprintf(&b, ", params=%s", m.Params)
	}
	if m.Result != nil {
		fmt.Fprintf(&b, ", result=%s", m.Result)
	}
	if m.Error != nil {
		fmt.Fprintf(&b, ", error=%s", m.Error)
	}
	if m.ID != nil {
		fmt.Fprintf(&b, ", id=%s", m.ID)
	}
	return b.String()
}
