package flow

import "unsafe"

// KeySize is the size of a Key in bytes, a multiple of 8.
const KeySize = 88

// The layout of Key must stay free of padding and a whole number of words.
var _ [KeySize - unsafe.Sizeof(Key{})]struct{}
var _ [unsafe.Sizeof(Key{}) - KeySize]struct{}

// bytes views k's memory. Key has no padding, so every byte is a field's.
func (k *Key) bytes() *[KeySize]byte { return (*[KeySize]byte)(unsafe.Pointer(k)) }
