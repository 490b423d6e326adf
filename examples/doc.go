// Package examples holds runnable programs that show the runtime at work;
// each sub-directory is a main package started with hcclrun, e.g.
//
//	go build -o /tmp/allreduce ./examples/allreduce && hcclrun -np 4 /tmp/allreduce
package examples
