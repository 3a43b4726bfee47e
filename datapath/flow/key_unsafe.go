package flow

import "unsafe"

// KeySize is the size of a Key in bytes, a multiple of 8.
const KeySize = 488

// The layout of Key must stay free of padding, a whole number of words,
// and word-aligned.
var _ [KeySize - unsafe.Sizeof(Key{})]struct{}
var _ [unsafe.Sizeof(Key{}) - KeySize]struct{}
var _ [unsafe.Alignof(Key{}) - 8]struct{}

// bytes views k's memory. Key has no padding, so every byte is a field's.
func (k *Key) bytes() *[KeySize]byte { return (*[KeySize]byte)(unsafe.Pointer(k)) }

// words views k's memory as native-endian words. Key is 8-byte aligned
// and a whole number of words.
func (k *Key) words() *[KeyWords]uint64 { return (*[KeyWords]uint64)(unsafe.Pointer(k)) }
