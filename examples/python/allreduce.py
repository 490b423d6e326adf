"""allreduce.py: hcclrun's runtime from Python (package hccl, over libhccl.so).

Every rank joins the job, runs every collective on NumPy arrays of several
dtypes, compares each result exactly with NumPy's own reduction of what every
rank sent, and prints "rank R/N ok" (or raises).

    make lib && PYTHONPATH=$PWD/python hcclrun -np 4 python3 examples/python/allreduce.py
"""

import numpy as np

import hccl

DTYPES = [np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint64, np.float16, np.float32, np.float64]
COUNTS = [0, 1, 7, 1001, 65537]


def values(rank, n, dtype, size, op="sum"):
    """Rank rank's data: small integers whose reductions are exact in dtype."""
    if op == "prod":  # one 2 per element over the ranks: the product is 2
        return np.where((rank + np.arange(n)) % size == 0, 2, 1).astype(dtype)
    cap = 127 if np.dtype(dtype).itemsize == 1 else 2048
    m = max(1, min(100, cap // (size * size)))
    v = (7 * rank + 3 * np.arange(n)) % m + 1
    return (v * size if op == "avg" else v).astype(dtype)


def reduced(n, dtype, size, op):
    all_ = np.stack([values(r, n, dtype, size, op).astype(np.int64) for r in range(size)]) if n else np.zeros((size, 0), np.int64)
    want = {"sum": all_.sum(0), "prod": all_.prod(0), "max": all_.max(0), "min": all_.min(0),
            "avg": all_.sum(0) // size}[op]
    return want.astype(dtype)


def same(what, got, want):
    if got.dtype != want.dtype or got.shape != want.shape or got.tobytes() != want.tobytes():
        bad = np.nonzero(got != want)[0][:1]
        raise AssertionError("%s: element %s is %s, want %s" % (what, bad, got[bad], want[bad]))


def check(comm, dtype, n):
    r, size = comm.rank, comm.size
    name = np.dtype(dtype).name
    ops = ["sum", "prod", "max", "min"] + (["avg"] if np.dtype(dtype).kind == "f" else [])
    for op in ops:
        x = values(r, n, dtype, size, op)
        out = np.zeros_like(x)
        comm.all_reduce(x, out, op=op)
        same("all_reduce %s %s" % (op, name), out, reduced(n, dtype, size, op))
        comm.all_reduce(x, op=op)  # in place
        same("all_reduce in place %s %s" % (op, name), x, reduced(n, dtype, size, op))
    for root in range(size):
        x = values(r, n, dtype, size)
        out = np.zeros_like(x) if r == root else None
        comm.reduce(x, out, op="max", root=root)
        if r == root:
            same("reduce %s root %d" % (name, root), out, reduced(n, dtype, size, "max"))
    x = values(r, n, dtype, size) if r == size - 1 else np.zeros(n, dtype)
    same("broadcast " + name, comm.broadcast(x, root=size - 1), values(size - 1, n, dtype, size))
    gathered = comm.all_gather(values(r, n, dtype, size), np.zeros(n * size, dtype))
    same("all_gather " + name, gathered, np.concatenate([values(s, n, dtype, size) for s in range(size)]))
    mine = comm.reduce_scatter(values(r, n * size, dtype, size), np.zeros(n, dtype))
    same("reduce_scatter " + name, mine, reduced(n * size, dtype, size, "sum")[r * n:(r + 1) * n])
    recv = comm.all_to_all(values(r, n * size, dtype, size), np.zeros(n * size, dtype))
    same("all_to_all " + name, recv, np.concatenate([values(s, n * size, dtype, size)[r * n:(r + 1) * n] for s in range(size)]))
    counts = lambda i, j: n * ((i + 2 * j) % 3) // 2  # noqa: E731  uneven blocks, some empty
    sc = [counts(r, j) for j in range(size)]
    rc = [counts(j, r) for j in range(size)]
    recv = comm.all_to_all_v(values(r, sum(sc), dtype, size), sc, np.zeros(sum(rc), dtype), rc)
    want = [values(s, sum(counts(s, j) for j in range(size)), dtype, size)[sum(counts(s, j) for j in range(r)):][:counts(s, r)]
            for s in range(size)]
    same("all_to_all_v " + name, recv, np.concatenate(want) if want else np.zeros(0, dtype))
    if size > 1:  # a ring of send and recv: rank 0 starts it, the others pass it on
        nxt, prv = (r + 1) % size, (r - 1) % size
        got = np.zeros(n, dtype)
        if r == 0:
            comm.send(values(r, n, dtype, size), nxt)
            comm.recv(got, prv)
        else:
            comm.recv(got, prv)
            comm.send(values(r, n, dtype, size), nxt)
        same("send/recv " + name, got, values(prv, n, dtype, size))


def main():
    with hccl.Comm() as comm:
        for dtype in DTYPES:
            for n in COUNTS:
                if n > 1001 and dtype not in (np.float32, np.int8):
                    continue  # large counts: two types suffice
                check(comm, dtype, n)
        # Memory the host's peers map, as hcclMemAlloc gives it.
        big = hccl.empty(1 << 20, np.float32)
        big[:] = comm.rank + 1
        comm.all_reduce(big)
        same("all_reduce on hccl.empty", big, np.full(1 << 20, comm.size * (comm.size + 1) // 2, np.float32))
        # A bad call raises, with the library's message naming this rank.
        try:
            comm.all_reduce(np.zeros(4, np.int32), op="avg")
        except hccl.InvalidArgument as e:
            assert "rank %d" % comm.rank in str(e) and "Avg" in str(e), str(e)
        else:
            raise AssertionError("avg of int32 did not raise")
        comm.barrier()
        print("rank %d/%d ok" % (comm.rank, comm.size), flush=True)


if __name__ == "__main__":
    main()
