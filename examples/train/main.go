// Command train is data-parallel SGD for linear regression. Every rank
// generates the same synthetic data set (a fixed seed), keeps the samples
// i with i % size == rank, computes the gradient of its samples of each
// mini-batch, and averages the gradient over all ranks with AllReduce, so
// that every rank applies the same update: the result equals a one-rank
// run up to floating-point summation order. Rank 0 prints the loss of every
// epoch and a checksum of the final weights. With -graph the step's
// gradient exchange (the weights' gradient and the loss, as two AllReduces
// a framework would make per layer) is recorded once as a graph and
// replayed every step; Compile fuses the two into one call.
//
//	hcclrun -np 4 ./train -epochs 10 -graph
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

func main() {
	epochs := flag.Int("epochs", 10, "passes over the data set")
	samples := flag.Int("samples", 4096, "samples in the data set")
	dim := flag.Int("dim", 16, "features per sample")
	batch := flag.Int("batch", 256, "global mini-batch size")
	lr := flag.Float64("lr", 0.05, "learning rate")
	graph := flag.Bool("graph", false, "exchange the gradients through a compiled graph")
	flag.Parse()
	if err := run(*epochs, *samples, *dim, *batch, *lr, *graph); err != nil {
		fmt.Fprintln(os.Stderr, "train:", err)
		os.Exit(1)
	}
}

// dataset returns samples x dim features and their targets y = x.w* + noise.
func dataset(samples, dim int) (x [][]float64, y []float64) {
	rng := rand.New(rand.NewPCG(42, 7))
	truth := make([]float64, dim)
	for j := range truth {
		truth[j] = rng.Float64()*2 - 1
	}
	x = make([][]float64, samples)
	y = make([]float64, samples)
	for i := range x {
		x[i] = make([]float64, dim)
		for j := range x[i] {
			x[i][j] = rng.NormFloat64()
			y[i] += x[i][j] * truth[j]
		}
		y[i] += 0.01 * rng.NormFloat64()
	}
	return x, y
}

func run(epochs, samples, dim, batch int, lr float64, graph bool) error {
	ctx := context.Background()
	comm, err := hccl.Init(ctx)
	if err != nil {
		return err
	}
	defer comm.Close()
	x, y := dataset(samples, dim)
	w := make([]float64, dim)
	// grad holds the gradient sum and, in its last element, the squared
	// error sum, so one AllReduce carries both.
	grad := make([]float64, dim+1)
	exchange := func() error { return hccl.AllReduce(ctx, comm, grad, grad, hccl.Sum) }
	if graph {
		g := hccl.NewGraph(comm)
		if err := hccl.GraphAllReduce(g, grad[:dim], grad[:dim], hccl.Sum); err != nil {
			return err
		}
		if err := hccl.GraphAllReduce(g, grad[dim:], grad[dim:], hccl.Sum); err != nil {
			return err
		}
		exe, err := g.Compile(ctx)
		if err != nil {
			return err
		}
		defer exe.Close()
		exchange = func() error { return exe.Run(ctx) }
	}
	for epoch := range epochs {
		loss := 0.0
		for lo := 0; lo < samples; lo += batch {
			hi := min(lo+batch, samples)
			clear(grad)
			for i := lo; i < hi; i++ {
				if i%comm.Size() != comm.Rank() {
					continue
				}
				pred := 0.0
				for j, v := range x[i] {
					pred += v * w[j]
				}
				e := pred - y[i]
				for j, v := range x[i] {
					grad[j] += e * v
				}
				grad[dim] += e * e
			}
			if err := exchange(); err != nil {
				return err
			}
			for j := range w {
				w[j] -= lr * grad[j] / float64(hi-lo)
			}
			loss += grad[dim]
		}
		if comm.Rank() == 0 {
			fmt.Printf("epoch %d loss %.8f\n", epoch, loss/float64(samples))
		}
	}
	if comm.Rank() == 0 {
		sum := 0.0
		for j, v := range w {
			sum += float64(j+1) * v
		}
		fmt.Printf("checksum %.8f\n", sum)
	}
	return comm.Close()
}
