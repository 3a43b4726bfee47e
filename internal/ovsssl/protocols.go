package ovsssl

import (
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
)

// DefaultProtocols is OVS's protocol list when --ssl-protocols is not
// given. Without the option OVS leaves OpenSSL's defaults alone, which
// include TLSv1.3; with it, only the versions named are enabled.
const DefaultProtocols = "TLSv1,TLSv1.1,TLSv1.2"

// ParseProtocols parses --ssl-protocols: TLSv1, TLSv1.1 and TLSv1.2,
// case-insensitive, separated by spaces, commas or tabs, with
// stream-ssl's error texts. OpenSSL cannot enable versions above a gap,
// and crypto/tls takes a range: min is the lowest version named and max
// the top of the unbroken run above it. TLSv1.3 is not a word OVS 3.1
// accepts, and an explicit list disables it there too.
func ParseProtocols(s string) (min, max uint16, err error) {
	words := strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' || r == '\t' })
	if len(words) == 0 {
		return 0, 0, errors.New("SSL protocol settings invalid")
	}
	on := map[uint16]bool{}
	for _, w := range words {
		switch strings.ToLower(w) {
		case "tlsv1.2":
			on[tls.VersionTLS12] = true
		case "tlsv1.1":
			on[tls.VersionTLS11] = true
		case "tlsv1":
			on[tls.VersionTLS10] = true
		default:
			return 0, 0, fmt.Errorf("%s: SSL protocol not recognized", w)
		}
	}
	for _, v := range []uint16{tls.VersionTLS10, tls.VersionTLS11, tls.VersionTLS12} {
		if on[v] {
			if min == 0 {
				min = v
			}
			max = v
		} else if min != 0 {
			break
		}
	}
	return min, max, nil
}
