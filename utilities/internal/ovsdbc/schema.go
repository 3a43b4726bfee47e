package ovsdbc

import (
	"fmt"
	"os"

	"github.com/govs/govs/internal/daemon"
	"github.com/govs/govs/ovsdb/db"
)

// ReadSchema reads a schema file, with OVS's errors for one that cannot be
// read or parsed; it returns the file's bytes too.
func ReadSchema(path string) (*db.Schema, []byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to read schema: \"%s\" could not be read as JSON (error opening \"%s\": %s)",
			path, path, daemon.Strerror(err))
	}
	s, err := db.ParseSchema(data)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to parse \"%s\" as ovsdb schema: %v", path, err)
	}
	return s, data, nil
}
