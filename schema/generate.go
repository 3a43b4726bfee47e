// Package schema holds the OVSDB schemas govs serves and the Go models
// generated from them with libovsdb's modelgen.
//
// vswitch.ovsschema is Open vSwitch 3.1's Open_vSwitch schema (8.3.1);
// _server.ovsschema is the _Server database every ovsdb-server offers.
package schema

import _ "embed"

//go:generate go run github.com/ovn-kubernetes/libovsdb/cmd/modelgen -p vswitchd -o vswitchd vswitch.ovsschema
//go:generate go run github.com/ovn-kubernetes/libovsdb/cmd/modelgen -p serverdb -o serverdb _server.ovsschema

// VSwitch is the Open_vSwitch database schema, as JSON.
//
//go:embed vswitch.ovsschema
var VSwitch []byte

// Server is the _Server database schema, as JSON.
//
//go:embed _server.ovsschema
var Server []byte
