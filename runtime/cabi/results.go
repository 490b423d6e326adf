package main

/*
#define HCCL_COMM_AS_HANDLE
#define HCCL_NO_PROTOTYPES
#include "hccl.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime/debug"
	"strings"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

// resultOf maps a Go error onto its result code. An aborted job is told
// first: its error may wrap the cause a peer reported (a mismatch, a
// timeout), but what this rank must know is that the job is gone.
func resultOf(err error) C.hcclResult_t {
	switch {
	case err == nil:
		return C.hcclSuccess
	case errors.Is(err, hccl.ErrAborted):
		return C.hcclAborted
	case errors.Is(err, hccl.ErrMismatch):
		return C.hcclMismatch
	case errors.Is(err, hccl.ErrTimeout):
		return C.hcclTimeout
	case errors.Is(err, hccl.ErrInvalidArgument):
		return C.hcclInvalidArgument
	case errors.Is(err, hccl.ErrClosed):
		return C.hcclClosed
	case errors.Is(err, errInternal):
		return C.hcclInternalError
	}
	return C.hcclSystemError
}

// errInternal marks a recovered panic.
var errInternal = errors.New("internal error")

// run is every communicator call's road: it looks the handle up, runs f,
// keeps the message of a failure and turns it into a result code. op
// names the call in the errors made here ("AllReduce"); the runtime's
// errors name theirs.
func run(h C.hcclComm_t, op string, f func(c *comm) error) (res C.hcclResult_t) {
	var c *comm
	defer recoverInto(&res, &c, op)
	c, err := lookup(h)
	if err != nil {
		return failed(nil, named(op, -1, err))
	}
	return failed(c, named(op, c.Rank(), f(c)))
}

// runFree is run for the calls without a communicator.
func runFree(op string, f func() error) (res C.hcclResult_t) {
	var c *comm
	defer recoverInto(&res, &c, op)
	return failed(nil, named(op, -1, f()))
}

// named gives err the call's name and the rank (-1: none) as the
// runtime's errors have them ("hccl: AllReduce rank 2: ..."), unless it
// is one of those already.
func named(op string, rank int, err error) error {
	if err == nil || strings.HasPrefix(err.Error(), "hccl: ") {
		return err
	}
	return &hccl.OpError{Op: op, Rank: rank, Peer: -1, Step: -1, Err: err}
}

// recoverInto turns a panic into hcclInternalError, so that none crosses
// into C, where it would end the process.
func recoverInto(res *C.hcclResult_t, c **comm, op string) {
	if p := recover(); p != nil {
		rank := -1
		if *c != nil {
			rank = (*c).Rank()
		}
		*res = failed(*c, named(op, rank, fmt.Errorf("%w: panic: %v\n%s", errInternal, p, debug.Stack())))
	}
}

// failed records err as c's last error (when c is known) and as the
// library's, and returns its code.
func failed(c *comm, err error) C.hcclResult_t {
	if err == nil {
		return C.hcclSuccess
	}
	if c != nil {
		c.lastErr.set(err.Error())
	}
	lastErr.set(err.Error())
	return resultOf(err)
}

var resultNames = [C.hcclNumResults]*C.char{
	C.hcclSuccess:         C.CString("no error"),
	C.hcclInvalidArgument: C.CString("invalid argument"),
	C.hcclMismatch:        C.CString("mismatched collective calls across ranks"),
	C.hcclAborted:         C.CString("job aborted"),
	C.hcclTimeout:         C.CString("timed out"),
	C.hcclClosed:          C.CString("communicator destroyed"),
	C.hcclSystemError:     C.CString("system error"),
	C.hcclInternalError:   C.CString("internal error"),
}

var unknownResult = C.CString("unknown result code")

//export hcclGetErrorString
func hcclGetErrorString(r C.hcclResult_t) *C.char {
	if r >= C.hcclNumResults {
		return unknownResult
	}
	return resultNames[r]
}

//export hcclCommGetLastError
func hcclCommGetLastError(h C.hcclComm_t) *C.char {
	if h == 0 {
		return lastErr.cString()
	}
	c, err := lookup(h)
	if err != nil {
		return lastErr.cString()
	}
	return c.lastErr.cString()
}
