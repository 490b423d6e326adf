"""graph.py: graph mode from Python (hccl.Graph, over libhccl.so).

Every rank records one step's collectives on NumPy arrays once (small
all_reduces that fuse, a large one, every other collective, several
dtypes), compiles the graph, and runs it three times with new data in the
same arrays; after each run it compares every result exactly with the same
calls made one by one on copies, and prints "rank R/N ok" (or raises).

    make lib && PYTHONPATH=$PWD/python hcclrun -np 3 python3 examples/python/graph.py
"""

import gc
import weakref

import numpy as np

import hccl


def data(rank, k, it, n, dtype):
    """Rank rank's input of node k in run it: small integers, exact in dtype."""
    return ((5 * rank + 3 * k + 7 * it + np.arange(n)) % 11 + 1).astype(dtype)


def same(what, got, want):
    if got.dtype != want.dtype or got.shape != want.shape or got.tobytes() != want.tobytes():
        bad = np.nonzero(got != want)[0][:1]
        raise AssertionError("%s: element %s is %s, want %s" % (what, bad, got[bad], want[bad]))


class Step:
    """The step's collectives over its arrays: record() puts them on a graph,
    run_one_by_one() makes them on the communicator, on copies."""

    def __init__(self, comm):
        self.r, self.n = comm.rank, comm.size
        n = self.n
        # (name, send, recv, keyword arguments); recv None: in place.
        self.nodes = []
        for i in range(6):  # DDP's bucket: adjacent small float32 sums
            x = np.zeros(1000 + i, np.float32)
            self.nodes.append(("all_reduce", x, None if i % 2 else np.zeros_like(x), {}))
        self.nodes.append(("all_reduce", np.zeros(333, np.int32), None, {"op": "max"}))
        self.nodes.append(("all_reduce", np.zeros(334, np.int32), np.zeros(334, np.int32), {"op": "max"}))
        self.nodes.append(("all_reduce", np.zeros(300000, np.float32), None, {}))  # too large to fuse
        self.nodes.append(("broadcast", np.zeros(777, np.int64), None, {"root": n - 1}))
        self.nodes.append(("reduce", np.zeros(500, np.float64),
                           np.zeros(500, np.float64) if self.r == 0 else None, {"root": 0}))
        self.nodes.append(("all_gather", np.zeros(513, np.uint8), np.zeros(513 * n, np.uint8), {}))
        self.nodes.append(("reduce_scatter", np.zeros(100 * n, np.int16), np.zeros(100, np.int16), {}))
        self.nodes.append(("barrier", None, None, {}))
        self.nodes.append(("all_to_all", np.zeros(50 * n, np.int8), np.zeros(50 * n, np.int8), {}))
        sc = [(self.r + j) % 3 * 7 for j in range(n)]
        rc = [(j + self.r) % 3 * 7 for j in range(n)]
        self.nodes.append(("all_to_all_v", np.zeros(sum(sc), np.float32), np.zeros(sum(rc), np.float32),
                           {"send_counts": sc, "recv_counts": rc}))
        self.nodes.append(("all_reduce", np.zeros(65, np.float16), None, {"op": "min"}))

    def fill(self, it):
        """New data in the same arrays (the graph holds the arrays, not their contents)."""
        for k, (_, send, recv, _) in enumerate(self.nodes):
            if send is not None:
                send[:] = data(self.r, k, it, send.size, send.dtype)
            if recv is not None:
                recv[:] = 0

    def record(self, g):
        for name, send, recv, kw in self.nodes:
            call(g, name, send, recv, kw)

    def run_one_by_one(self, comm):
        """The results the graph must give: the same calls, made one by one on copies."""
        out = []
        for name, send, recv, kw in self.nodes:
            s = None if send is None else send.copy()
            r = None if recv is None else recv.copy()
            out.append(call(comm, name, s, r, kw))
        return out


def call(target, name, send, recv, kw):
    """Records (on a Graph) or makes (on a Comm) one node; returns what it writes."""
    if name == "barrier":
        target.barrier()
        return None
    if name == "broadcast":
        return target.broadcast(send, **kw)
    if name == "reduce":
        return target.reduce(send, recv, **kw)
    if name == "all_to_all_v":
        return target.all_to_all_v(send, kw["send_counts"], recv, kw["recv_counts"])
    if name in ("all_gather", "reduce_scatter", "all_to_all"):
        return getattr(target, name)(send, recv, **kw)
    return target.all_reduce(send, recv, **kw)


def main():
    with hccl.Comm() as comm:
        step = Step(comm)
        with hccl.Graph(comm) as g:
            step.record(g)
            # The graph keeps the arrays it records alive: this one is only its.
            tmp = np.full(8, comm.rank + 1, np.float32)
            g.all_reduce(tmp)
            alive = weakref.ref(tmp)
            del tmp
            gc.collect()
            assert alive() is not None, "the graph let go of a recorded array"
            exe = g.compile()
        with exe:
            if comm.size > 1:
                assert exe.steps < len(step.nodes) + 1, "nothing fused: %d steps" % exe.steps
            for it in range(3):
                step.fill(it)
                want = step.run_one_by_one(comm)
                step.fill(it)
                exe.run()
                for k, ((name, send, recv, _), w) in enumerate(zip(step.nodes, want)):
                    got = recv if recv is not None else send
                    if w is not None and got is not None and not (name == "reduce" and comm.rank != 0):
                        same("run %d node %d %s %s" % (it, k, name, got.dtype), got, w)
                same("run %d the temporary array" % it, alive(),
                     np.full(8, comm.size * (comm.size + 1) // 2, np.float32) * comm.size ** it)
            # A closed-form check of one node, that the reference itself is right.
            n0 = step.nodes[0][2]
            same("node 0 closed form", n0, sum(data(r, 0, 2, n0.size, np.float32) for r in range(comm.size)))
        try:
            exe.run()
        except hccl.Closed:
            pass
        else:
            raise AssertionError("a closed executable ran")

        # A bad recording call raises there, naming the call and this rank,
        # and again at compile, which makes no graph without it.
        for bad_call, error, text in (
                (lambda g: g.all_reduce(np.zeros(4, np.int32), op="avg"), hccl.InvalidArgument,
                 "GraphAllReduce rank %d" % comm.rank),
                (lambda g: g.all_gather(np.zeros(4, np.int32), np.zeros(3, np.int32)), ValueError, "recv has 3")):
            with hccl.Graph(comm) as bad:
                bad.barrier()
                for f in (bad_call, lambda g: g.compile()):
                    try:
                        f(bad)
                    except error as e:
                        assert text in str(e), str(e)
                    else:
                        raise AssertionError("no %s with %s" % (error.__name__, text))
        comm.barrier()
        print("rank %d/%d ok" % (comm.rank, comm.size), flush=True)


if __name__ == "__main__":
    main()
