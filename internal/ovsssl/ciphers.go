package ovsssl

import (
	"crypto/tls"
	"fmt"
	"sort"
	"strings"
)

// DefaultCiphers is OVS's cipher list when --ssl-ciphers is not given.
const DefaultCiphers = "HIGH:!aNULL:!MD5"

// suite is one TLS 1.0–1.2 cipher suite Go's crypto/tls implements, with
// its OpenSSL name and the OpenSSL aliases it belongs to. TLS 1.3 suites
// are not chosen by cipher strings, in OpenSSL as in Go.
type suite struct {
	id       uint16
	name     string   // OpenSSL name
	bits     int      // symmetric key strength, for @STRENGTH
	attrs    []string // OpenSSL aliases that select it
	strength string   // HIGH, MEDIUM or LOW
}

var suites = []suite{
	{tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, "ECDHE-ECDSA-AES256-GCM-SHA384", 256, []string{"kECDHE", "kEECDH", "ECDHE", "EECDH", "aECDSA", "ECDSA", "AES", "AES256", "AESGCM", "SHA384", "TLSv1.2"}, "HIGH"},
	{tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, "ECDHE-RSA-AES256-GCM-SHA384", 256, []string{"kECDHE", "kEECDH", "ECDHE", "EECDH", "aRSA", "AES", "AES256", "AESGCM", "SHA384", "TLSv1.2"}, "HIGH"},
	{tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, "ECDHE-ECDSA-CHACHA20-POLY1305", 256, []string{"kECDHE", "kEECDH", "ECDHE", "EECDH", "aECDSA", "ECDSA", "CHACHA20", "SHA256", "TLSv1.2"}, "HIGH"},
	{tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256, "ECDHE-RSA-CHACHA20-POLY1305", 256, []string{"kECDHE", "kEECDH", "ECDHE", "EECDH", "aRSA", "CHACHA20", "SHA256", "TLSv1.2"}, "HIGH"},
	{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, "ECDHE-ECDSA-AES128-GCM-SHA256", 128, []string{"kECDHE", "kEECDH", "ECDHE", "EECDH", "aECDSA", "ECDSA", "AES", "AES128", "AESGCM", "SHA256", "TLSv1.2"}, "HIGH"},
	{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, "ECDHE-RSA-AES128-GCM-SHA256", 128, []string{"kECDHE", "kEECDH", "ECDHE", "EECDH", "aRSA", "AES", "AES128", "AESGCM", "SHA256", "TLSv1.2"}, "HIGH"},
	{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256, "ECDHE-ECDSA-AES128-SHA256", 128, []string{"kECDHE", "kEECDH", "ECDHE", "EECDH", "aECDSA", "ECDSA", "AES", "AES128", "SHA256", "TLSv1.2"}, "HIGH"},
	{tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256, "ECDHE-RSA-AES128-SHA256", 128, []string{"kECDHE", "kEECDH", "ECDHE", "EECDH", "aRSA", "AES", "AES128", "SHA256", "TLSv1.2"}, "HIGH"},
	{tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA, "ECDHE-ECDSA-AES256-SHA", 256, []string{"kECDHE", "kEECDH", "ECDHE", "EECDH", "aECDSA", "ECDSA", "AES", "AES256", "SHA1", "SHA", "TLSv1", "SSLv3"}, "HIGH"},
	{tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA, "ECDHE-RSA-AES256-SHA", 256, []string{"kECDHE", "kEECDH", "ECDHE", "EECDH", "aRSA", "AES", "AES256", "SHA1", "SHA", "TLSv1", "SSLv3"}, "HIGH"},
	{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, "ECDHE-ECDSA-AES128-SHA", 128, []string{"kECDHE", "kEECDH", "ECDHE", "EECDH", "aECDSA", "ECDSA", "AES", "AES128", "SHA1", "SHA", "TLSv1", "SSLv3"}, "HIGH"},
	{tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA, "ECDHE-RSA-AES128-SHA", 128, []string{"kECDHE", "kEECDH", "ECDHE", "EECDH", "aRSA", "AES", "AES128", "SHA1", "SHA", "TLSv1", "SSLv3"}, "HIGH"},
	{tls.TLS_RSA_WITH_AES_256_GCM_SHA384, "AES256-GCM-SHA384", 256, []string{"kRSA", "RSA", "aRSA", "AES", "AES256", "AESGCM", "SHA384", "TLSv1.2"}, "HIGH"},
	{tls.TLS_RSA_WITH_AES_128_GCM_SHA256, "AES128-GCM-SHA256", 128, []string{"kRSA", "RSA", "aRSA", "AES", "AES128", "AESGCM", "SHA256", "TLSv1.2"}, "HIGH"},
	{tls.TLS_RSA_WITH_AES_128_CBC_SHA256, "AES128-SHA256", 128, []string{"kRSA", "RSA", "aRSA", "AES", "AES128", "SHA256", "TLSv1.2"}, "HIGH"},
	{tls.TLS_RSA_WITH_AES_256_CBC_SHA, "AES256-SHA", 256, []string{"kRSA", "RSA", "aRSA", "AES", "AES256", "SHA1", "SHA", "TLSv1", "SSLv3"}, "HIGH"},
	{tls.TLS_RSA_WITH_AES_128_CBC_SHA, "AES128-SHA", 128, []string{"kRSA", "RSA", "aRSA", "AES", "AES128", "SHA1", "SHA", "TLSv1", "SSLv3"}, "HIGH"},
	{tls.TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA, "ECDHE-RSA-DES-CBC3-SHA", 112, []string{"kECDHE", "kEECDH", "ECDHE", "EECDH", "aRSA", "3DES", "SHA1", "SHA", "TLSv1", "SSLv3"}, "MEDIUM"},
	{tls.TLS_RSA_WITH_3DES_EDE_CBC_SHA, "DES-CBC3-SHA", 112, []string{"kRSA", "RSA", "aRSA", "3DES", "SHA1", "SHA", "TLSv1", "SSLv3"}, "MEDIUM"},
	{tls.TLS_ECDHE_ECDSA_WITH_RC4_128_SHA, "ECDHE-ECDSA-RC4-SHA", 128, []string{"kECDHE", "kEECDH", "ECDHE", "EECDH", "aECDSA", "ECDSA", "RC4", "SHA1", "SHA", "TLSv1", "SSLv3"}, "LOW"},
	{tls.TLS_ECDHE_RSA_WITH_RC4_128_SHA, "ECDHE-RSA-RC4-SHA", 128, []string{"kECDHE", "kEECDH", "ECDHE", "EECDH", "aRSA", "RC4", "SHA1", "SHA", "TLSv1", "SSLv3"}, "LOW"},
	{tls.TLS_RSA_WITH_RC4_128_SHA, "RC4-SHA", 128, []string{"kRSA", "RSA", "aRSA", "RC4", "SHA1", "SHA", "TLSv1", "SSLv3"}, "LOW"},
}

// emptyAliases are OpenSSL aliases that name only ciphers Go's crypto/tls
// does not implement (or none at all): they select nothing, silently, as
// an OpenSSL built without those ciphers does.
var emptyAliases = map[string]bool{
	"eNULL": true, "NULL": true, "aNULL": true, "MD5": true, "kDHE": true, "kEDH": true, "DHE": true,
	"EDH": true, "ADH": true, "AECDH": true, "kDH": true, "kDHr": true, "kDHd": true, "aDSS": true,
	"DSS": true, "aDH": true, "kECDHr": true, "kECDHe": true, "kPSK": true, "PSK": true, "aPSK": true,
	"kECDHEPSK": true, "kDHEPSK": true, "kRSAPSK": true, "SRP": true, "kSRP": true, "aSRP": true,
	"CAMELLIA": true, "CAMELLIA128": true, "CAMELLIA256": true, "ARIA": true, "ARIA128": true,
	"ARIA256": true, "ARIAGCM": true, "SEED": true, "IDEA": true, "DES": true, "RC2": true,
	"AESCCM": true, "AESCCM8": true, "GOST94": true, "GOST89MAC": true, "kGOST": true, "aGOST": true,
	"aGOST01": true, "EXP": true, "EXPORT": true, "kFZA": true, "aFZA": true, "eFZA": true, "FZA": true,
	"SUITEB128": true, "SUITEB128ONLY": true, "SUITEB192": true, "COMPLEMENTOFALL": true,
	"SSLv2": true,
}

// selects returns the suites an element ("AES", "ECDHE+AESGCM", a cipher
// name) selects, and whether OpenSSL knows the word at all.
func selects(elem string) ([]int, bool) {
	var out []int
	known := true
	for i := range suites {
		match := true
		for _, w := range strings.Split(elem, "+") {
			if !suiteHas(&suites[i], w) {
				match = false
			}
		}
		if match {
			out = append(out, i)
		}
	}
	for _, w := range strings.Split(elem, "+") {
		if !wordKnown(w) {
			known = false
		}
	}
	return out, known
}

func suiteHas(s *suite, w string) bool {
	switch w {
	case "ALL", "DEFAULT", "COMPLEMENTOFDEFAULT":
		// DEFAULT is ALL:!COMPLEMENTOFDEFAULT:!eNULL; no suite Go
		// implements is outside it except those below.
		if w == "COMPLEMENTOFDEFAULT" {
			return s.strength == "LOW"
		}
		if w == "DEFAULT" {
			return s.strength != "LOW"
		}
		return true
	case "HIGH", "MEDIUM", "LOW":
		return s.strength == w
	case "ECDH":
		return hasAttr(s, "kECDHE")
	case s.name:
		return true
	}
	return hasAttr(s, w)
}

func hasAttr(s *suite, w string) bool {
	for _, a := range s.attrs {
		if a == w {
			return true
		}
	}
	return false
}

func wordKnown(w string) bool {
	switch w {
	case "ALL", "DEFAULT", "COMPLEMENTOFDEFAULT", "HIGH", "MEDIUM", "LOW", "ECDH":
		return true
	}
	if _, ok := emptyAliases[w]; ok {
		return true
	}
	for i := range suites {
		if suites[i].name == w || hasAttr(&suites[i], w) {
			return true
		}
	}
	return false
}

// ParseCiphers turns an OpenSSL cipher list ("HIGH:!aNULL:!MD5") into the
// crypto/tls suites it selects, following OpenSSL's rules: elements are
// separated by ':', ',' or ' '; "!X" removes X for good, "-X" removes it,
// "+X" moves it to the end, "X+Y" selects what is in both, "@STRENGTH"
// sorts by key strength. Words OpenSSL does not know, or ciphers Go does
// not implement, select nothing and are returned in ignored, so the
// caller can report them. A list that selects nothing is an error with
// OpenSSL's text, as stream-ssl reports it.
func ParseCiphers(s string) (ids []uint16, ignored []string, err error) {
	var list []int
	banned := map[int]bool{}
	in := func(i int) int {
		for j, x := range list {
			if x == i {
				return j
			}
		}
		return -1
	}
	for _, elem := range strings.FieldsFunc(s, func(r rune) bool { return r == ':' || r == ',' || r == ' ' || r == ';' }) {
		op := byte(0)
		if elem[0] == '!' || elem[0] == '-' || elem[0] == '+' {
			op, elem = elem[0], elem[1:]
		}
		if elem == "" {
			continue
		}
		if elem[0] == '@' {
			switch {
			case elem == "@STRENGTH":
				sort.SliceStable(list, func(a, b int) bool { return suites[list[a]].bits > suites[list[b]].bits })
			case strings.HasPrefix(elem, "@SECLEVEL="):
				// Go enforces its own key-size floors; the level
				// is reported as not applied.
				ignored = append(ignored, elem)
			default:
				ignored = append(ignored, elem)
			}
			continue
		}
		sel, known := selects(elem)
		if !known {
			ignored = append(ignored, elem)
		}
		for _, i := range sel {
			switch op {
			case '!':
				banned[i] = true
				if j := in(i); j >= 0 {
					list = append(list[:j], list[j+1:]...)
				}
			case '-':
				if j := in(i); j >= 0 {
					list = append(list[:j], list[j+1:]...)
				}
			case '+':
				if j := in(i); j >= 0 {
					list = append(append(list[:j], list[j+1:]...), i)
				}
			default:
				if !banned[i] && in(i) < 0 {
					list = append(list, i)
				}
			}
		}
	}
	if len(list) == 0 {
		return nil, ignored, fmt.Errorf("SSL_CTX_set_cipher_list: error:0A0000B9:SSL routines::no cipher match")
	}
	ids = make([]uint16, len(list))
	for j, i := range list {
		ids[j] = suites[i].id
	}
	return ids, ignored, nil
}
