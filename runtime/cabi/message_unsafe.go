package main

/*
#include <stdlib.h>
*/
import "C"

import (
	"sync"
	"unsafe"
)

// lastErr is the last failure of any call, hcclCommGetLastError(NULL).
var lastErr message

// message is a failure's text in C memory. The buffer is allocated once
// and overwritten, never freed while C may hold it, so that a pointer
// hcclCommGetLastError returned never dangles; a message longer than it
// is cut.
type message struct {
	mu  sync.Mutex
	buf *C.char
}

const messageCap = 4096

func (m *message) set(text string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.buf == nil {
		m.buf = (*C.char)(C.calloc(messageCap, 1))
	}
	if len(text) >= messageCap {
		text = text[:messageCap-1]
	}
	dst := unsafe.Slice((*byte)(unsafe.Pointer(m.buf)), messageCap)
	dst[copy(dst, text)] = 0
}

func (m *message) cString() *C.char {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.buf == nil {
		return empty
	}
	return m.buf
}

var empty = C.CString("")
