//go:build !linux

package netdev

// OpenAFXDP is Linux-only.
func OpenAFXDP(name string, cfg AFXDPConfig) (Port, error) { return nil, errUnsupported }
