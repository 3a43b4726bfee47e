//go:build tools

package schema

import _ "github.com/ovn-kubernetes/libovsdb/cmd/modelgen"
