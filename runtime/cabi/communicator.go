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

	hccl "github.com/hcclrun/hcclrun/runtime"
)

//export hcclGetVersion
func hcclGetVersion(version *C.int) C.hcclResult_t {
	return runFree("GetVersion", func() error {
		if version == nil {
			return fmt.Errorf("%w: version is NULL", hccl.ErrInvalidArgument)
		}
		*version = C.HCCL_VERSION_CODE
		return nil
	})
}

//export hcclCommInitFromEnv
func hcclCommInitFromEnv(out *C.hcclComm_t) C.hcclResult_t {
	return runFree("CommInitFromEnv", func() error {
		if out == nil {
			return fmt.Errorf("%w: comm is NULL", hccl.ErrInvalidArgument)
		}
		*out = 0
		c, err := hccl.Init(background)
		if err != nil {
			return err
		}
		*out = register(c)
		return nil
	})
}

//export hcclCommDestroy
func hcclCommDestroy(h C.hcclComm_t) C.hcclResult_t {
	return run(h, "CommDestroy", func(c *comm) error {
		unregister(h)
		return c.Close()
	})
}

//export hcclCommAbort
func hcclCommAbort(h C.hcclComm_t) C.hcclResult_t {
	return run(h, "CommAbort", func(c *comm) error {
		unregister(h)
		c.Abort(errors.New("hcclCommAbort"))
		if err := c.Close(); err != nil && !errors.Is(err, hccl.ErrAborted) {
			return err
		}
		return nil
	})
}

// query answers one of the communicator's numbers.
func query(h C.hcclComm_t, op string, out *C.int, f func(*hccl.Comm) int) C.hcclResult_t {
	return run(h, op, func(c *comm) error {
		if out == nil {
			return invalidArg(c.Comm, op, "the result pointer is NULL")
		}
		*out = C.int(f(c.Comm))
		return nil
	})
}

//export hcclCommRank
func hcclCommRank(h C.hcclComm_t, rank *C.int) C.hcclResult_t {
	return query(h, "CommRank", rank, (*hccl.Comm).Rank)
}

//export hcclCommCount
func hcclCommCount(h C.hcclComm_t, count *C.int) C.hcclResult_t {
	return query(h, "CommCount", count, (*hccl.Comm).Size)
}

//export hcclCommLocalRank
func hcclCommLocalRank(h C.hcclComm_t, rank *C.int) C.hcclResult_t {
	return query(h, "CommLocalRank", rank, (*hccl.Comm).LocalRank)
}

//export hcclCommLocalCount
func hcclCommLocalCount(h C.hcclComm_t, count *C.int) C.hcclResult_t {
	return query(h, "CommLocalCount", count, (*hccl.Comm).LocalSize)
}
