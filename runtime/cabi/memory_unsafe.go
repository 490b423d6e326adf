package main

/*
#define HCCL_COMM_AS_HANDLE
#define HCCL_NO_PROTOTYPES
#include "hccl.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

//export hcclMemAlloc
func hcclMemAlloc(ptr *unsafe.Pointer, size C.size_t) C.hcclResult_t {
	return runFree("MemAlloc", func() error {
		if ptr == nil {
			return fmt.Errorf("%w: ptr is NULL", hccl.ErrInvalidArgument)
		}
		*ptr = nil
		if uint64(size) > uint64(1<<62) {
			return fmt.Errorf("%w: size %d overflows the address space", hccl.ErrInvalidArgument, uint64(size))
		}
		if size == 0 {
			return nil
		}
		buf, err := hccl.MemAlloc[byte](int(size))
		if err != nil {
			return err
		}
		*ptr = unsafe.Pointer(unsafe.SliceData(buf))
		return nil
	})
}

//export hcclMemFree
func hcclMemFree(ptr unsafe.Pointer) C.hcclResult_t {
	return runFree("MemFree", func() error {
		if ptr == nil {
			return nil
		}
		return hccl.MemFree(unsafe.Slice((*byte)(ptr), 1))
	})
}
