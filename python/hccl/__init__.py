"""hccl: hcclrun's runtime from Python.

A ctypes binding of libhccl.so (hccl.h) for NumPy arrays. Arrays are
passed to the library as they are, without copies, so they must be
C-contiguous, and the ones that receive must be writeable. A failed call
raises HcclError (a subclass per result code) carrying the library's whole
message: which rank, which peer, what was expected.

    import numpy as np, hccl
    with hccl.Comm() as comm:              # joins the job hcclrun started
        x = np.full(4, comm.rank, dtype=np.float32)
        comm.all_reduce(x)                 # in place: x is now the sum

A Graph records a step's collectives once, and its compiled Executable
replays them each step (see Graph).

The library is HCCL_LIBRARY when set, else the one `make lib` built in this
checkout (lib/libhccl.so), else libhccl.so from the loader's search path.
"""

import ctypes
import functools
import os
import weakref

import numpy as np

__all__ = [
    "Comm", "Graph", "Executable", "HcclError", "InvalidArgument", "Mismatch", "Aborted", "Timeout",
    "Closed", "SystemError", "InternalError", "empty", "version",
]


def _load():
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.environ.get("HCCL_LIBRARY"),
                  os.path.join(here, "..", "..", "lib", "libhccl.so"),
                  "libhccl.so"]
    errors = []
    for path in candidates:
        if not path or (os.sep in path and not os.path.exists(path)):
            continue
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            errors.append(str(e))
    raise ImportError("hccl: cannot load libhccl.so (set HCCL_LIBRARY, or run make lib): "
                      + "; ".join(errors or ["not found"]))


_lib = _load()

_c_comm = _c_graph = _c_exec = ctypes.c_void_p  # uintptr_t handles
_c_size_p = ctypes.POINTER(ctypes.c_size_t)
_vp, _sz, _int = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int
for _name, _args in {
    "hcclGetVersion": [ctypes.POINTER(_int)],
    "hcclCommInitFromEnv": [ctypes.POINTER(_c_comm)],
    "hcclCommDestroy": [_c_comm],
    "hcclCommAbort": [_c_comm],
    "hcclCommRank": [_c_comm, ctypes.POINTER(_int)],
    "hcclCommCount": [_c_comm, ctypes.POINTER(_int)],
    "hcclCommLocalRank": [_c_comm, ctypes.POINTER(_int)],
    "hcclCommLocalCount": [_c_comm, ctypes.POINTER(_int)],
    "hcclAllReduce": [_vp, _vp, _sz, _int, _int, _c_comm],
    "hcclBroadcast": [_vp, _vp, _sz, _int, _int, _c_comm],
    "hcclReduce": [_vp, _vp, _sz, _int, _int, _int, _c_comm],
    "hcclAllGather": [_vp, _vp, _sz, _int, _c_comm],
    "hcclReduceScatter": [_vp, _vp, _sz, _int, _int, _c_comm],
    "hcclAlltoAll": [_vp, _vp, _sz, _int, _c_comm],
    "hcclAlltoAllV": [_vp, _c_size_p, _c_size_p, _vp, _c_size_p, _c_size_p, _int, _c_comm],
    "hcclSend": [_vp, _sz, _int, _int, _c_comm],
    "hcclRecv": [_vp, _sz, _int, _int, _c_comm],
    "hcclBarrier": [_c_comm],
    "hcclMemAlloc": [ctypes.POINTER(_vp), _sz],
    "hcclMemFree": [_vp],
    "hcclGraphCreate": [_c_comm, ctypes.POINTER(_c_graph)],
    "hcclGraphSetFuseBytes": [_c_graph, ctypes.c_int64],
    "hcclGraphAllReduce": [_vp, _vp, _sz, _int, _int, _c_graph],
    "hcclGraphBroadcast": [_vp, _vp, _sz, _int, _int, _c_graph],
    "hcclGraphReduce": [_vp, _vp, _sz, _int, _int, _int, _c_graph],
    "hcclGraphAllGather": [_vp, _vp, _sz, _int, _c_graph],
    "hcclGraphReduceScatter": [_vp, _vp, _sz, _int, _int, _c_graph],
    "hcclGraphAlltoAll": [_vp, _vp, _sz, _int, _c_graph],
    "hcclGraphAlltoAllV": [_vp, _c_size_p, _c_size_p, _vp, _c_size_p, _c_size_p, _int, _c_graph],
    "hcclGraphBarrier": [_c_graph],
    "hcclGraphCompile": [_c_graph, ctypes.POINTER(_c_exec)],
    "hcclGraphLaunch": [_c_exec],
    "hcclGraphExecSteps": [_c_exec, ctypes.POINTER(_int)],
    "hcclGraphExecDestroy": [_c_exec],
    "hcclGraphDestroy": [_c_graph],
}.items():
    _f = getattr(_lib, _name)
    _f.argtypes, _f.restype = _args, _int
_lib.hcclGetErrorString.argtypes, _lib.hcclGetErrorString.restype = [_int], ctypes.c_char_p
_lib.hcclCommGetLastError.argtypes, _lib.hcclCommGetLastError.restype = [_c_comm], ctypes.c_char_p


class HcclError(Exception):
    """A failed call: code is the hcclResult_t, message the library's text."""

    def __init__(self, code, message):
        super().__init__(message or _lib.hcclGetErrorString(code).decode())
        self.code = code
        self.message = message


class InvalidArgument(HcclError): pass    # noqa: E701  bad arguments on this rank
class Mismatch(HcclError): pass           # noqa: E701  ranks called different collectives
class Aborted(HcclError): pass            # noqa: E701  the job was aborted
class Timeout(HcclError): pass            # noqa: E701  HCCL_EXEC_TIMEOUT or HCCL_CONNECT_TIMEOUT
class Closed(HcclError): pass             # noqa: E701  the communicator was destroyed
class SystemError(HcclError): pass        # noqa: E701,A001  a socket, shared memory, the launcher
class InternalError(HcclError): pass      # noqa: E701  a bug in hcclrun


_errors = {1: InvalidArgument, 2: Mismatch, 3: Aborted, 4: Timeout, 5: Closed,
           6: SystemError, 7: InternalError}


def _check(code, handle=None):
    if code != 0:
        msg = _lib.hcclCommGetLastError(handle).decode(errors="replace")
        raise _errors.get(code, HcclError)(code, msg)


# hcclDataType_t by NumPy dtype name; bfloat16 when a package (ml_dtypes)
# gives NumPy one.
_dtypes = {"int8": 0, "uint8": 1, "int32": 2, "uint32": 3, "int64": 4, "uint64": 5,
           "float16": 6, "float32": 7, "float64": 8, "bfloat16": 9, "int16": 10, "uint16": 11}
_ops = {"sum": 0, "prod": 1, "max": 2, "min": 3, "avg": 4}


def _dtype(*arrays):
    for a in arrays:
        if not isinstance(a, np.ndarray):
            raise TypeError("hccl: want a numpy.ndarray, got %s" % type(a).__name__)
        if not a.flags.c_contiguous:
            raise ValueError("hccl: the array is not C-contiguous (hccl passes arrays without copying them)")
    names = {a.dtype.name for a in arrays}
    if len(names) != 1:
        raise TypeError("hccl: the arrays' dtypes differ: %s" % ", ".join(sorted(names)))
    name = names.pop()
    if name not in _dtypes:
        raise TypeError("hccl: dtype %s is not one hccl reduces (%s)" % (name, ", ".join(_dtypes)))
    return _dtypes[name]


def _ptr(a):
    return ctypes.c_void_p(a.ctypes.data) if a is not None else None


def _writeable(a):
    if not a.flags.writeable:
        raise ValueError("hccl: the receiving array is read-only")
    return a


def _op(op):
    if op not in _ops:
        raise ValueError("hccl: op %r is none of %s" % (op, ", ".join(_ops)))
    return _ops[op]


def _counts(values, n, what):
    values = [int(v) for v in values]
    if len(values) != n:
        raise ValueError("hccl: %s has %d entries, want one per rank (%d)" % (what, len(values), n))
    return (ctypes.c_size_t * n)(*values)


def _records(method):
    """Tells the object of a collective method that its checks failed
    (_failed), for a Graph to keep the failure for compile."""
    @functools.wraps(method)
    def checked(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except Exception as e:
            self._failed(e)
            raise
    return checked


class _Collectives:
    """The collectives' argument checks, shared by Comm, which runs them,
    and Graph, which records them: each method checks its arrays and hands
    the call to _issue(name, args, arrays), name as in hcclName."""

    def _failed(self, error):
        pass

    @_records
    def all_reduce(self, send, recv=None, op="sum"):
        recv = send if recv is None else recv
        dt = _dtype(send, recv)
        _sized(recv, send.size, "recv")
        self._issue("AllReduce", (_ptr(send), _ptr(_writeable(recv)), send.size, dt, _op(op)), (send, recv))
        return recv

    @_records
    def broadcast(self, buf, root=0):
        self._issue("Broadcast", (_ptr(buf), _ptr(_writeable(buf)), buf.size, _dtype(buf), root), (buf,))
        return buf

    @_records
    def reduce(self, send, recv=None, op="sum", root=0):
        """recv is written on root only; elsewhere it may be None."""
        dt = _dtype(send) if recv is None else _dtype(send, recv)
        if recv is None and self.rank == root:
            recv = send
        if recv is not None and self.rank == root:
            _sized(recv, send.size, "recv")
        self._issue("Reduce", (_ptr(send), _ptr(recv if recv is None else _writeable(recv)),
                               send.size, dt, _op(op), root), (send, recv))
        return recv

    @_records
    def all_gather(self, send, recv):
        """recv holds size * send.size elements, rank i's at i * send.size."""
        _sized(recv, send.size * self.size, "recv")
        self._issue("AllGather", (_ptr(send), _ptr(_writeable(recv)), send.size, _dtype(send, recv)), (send, recv))
        return recv

    @_records
    def reduce_scatter(self, send, recv, op="sum"):
        """send holds size * recv.size elements; recv gets this rank's block."""
        _sized(send, recv.size * self.size, "send")
        self._issue("ReduceScatter", (_ptr(send), _ptr(_writeable(recv)), recv.size,
                                      _dtype(send, recv), _op(op)), (send, recv))
        return recv

    @_records
    def all_to_all(self, send, recv):
        """Block j of send (send.size / size elements) goes to rank j."""
        _sized(recv, send.size, "recv")
        if send.size % self.size:
            raise ValueError("hccl: send has %d elements, not a multiple of %d ranks" % (send.size, self.size))
        self._issue("AlltoAll", (_ptr(send), _ptr(_writeable(recv)), send.size // self.size,
                                 _dtype(send, recv)), (send, recv))
        return recv

    @_records
    def all_to_all_v(self, send, send_counts, recv, recv_counts, send_displs=None, recv_displs=None):
        """send[send_displs[j]:][:send_counts[j]] goes to rank j; displacements
        default to the blocks packed in rank order."""
        n = self.size
        sc, rc = _counts(send_counts, n, "send_counts"), _counts(recv_counts, n, "recv_counts")
        sd = _counts(send_displs if send_displs is not None else np.cumsum([0] + list(sc)[:-1]), n, "send_displs")
        rd = _counts(recv_displs if recv_displs is not None else np.cumsum([0] + list(rc)[:-1]), n, "recv_displs")
        for a, counts, displs, what in ((send, sc, sd, "send"), (recv, rc, rd, "recv")):
            end = max((d + c for c, d in zip(counts, displs)), default=0)
            if end > a.size:
                raise ValueError("hccl: %s has %d elements, its blocks reach %d" % (what, a.size, end))
        self._issue("AlltoAllV", (_ptr(send), sc, sd, _ptr(_writeable(recv)), rc, rd, _dtype(send, recv)),
                    (send, recv))
        return recv

    @_records
    def barrier(self):
        self._issue("Barrier", (), ())


class Comm(_Collectives):
    """A communicator: the ranks of the job hcclrun started.

    Collectives block until this rank's part is done; receive arrays are
    written in place, and a method that takes recv=None works in place on
    send. Counts come from the arrays' sizes, which are checked here: the
    library trusts a count to fit its buffers, as C must.
    """

    def __init__(self):
        h = _c_comm()
        _check(_lib.hcclCommInitFromEnv(ctypes.byref(h)))
        self._h = h
        self.rank = self._query(_lib.hcclCommRank)
        self.size = self._query(_lib.hcclCommCount)
        self.local_rank = self._query(_lib.hcclCommLocalRank)
        self.local_size = self._query(_lib.hcclCommLocalCount)

    def _query(self, f):
        v = ctypes.c_int()
        _check(f(self._h, ctypes.byref(v)), self._h)
        return v.value

    def _call(self, f, *args):
        _check(f(*args, self._h), self._h)

    def _issue(self, name, args, arrays):
        self._call(getattr(_lib, "hccl" + name), *args)

    def send(self, buf, peer):
        self._call(_lib.hcclSend, _ptr(buf), buf.size, _dtype(buf), peer)

    def recv(self, buf, peer):
        self._call(_lib.hcclRecv, _ptr(_writeable(buf)), buf.size, _dtype(buf), peer)
        return buf

    def abort(self):
        """Aborts the whole job; the communicator is then closed."""
        h, self._h = self._h, None
        _check(_lib.hcclCommAbort(h), h)

    def close(self):
        if self._h is not None:
            h, self._h = self._h, None
            _check(_lib.hcclCommDestroy(h), h)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Graph(_Collectives):
    """A step's collectives recorded once, to be compiled and run each step
    (graph mode, hccl.h's hcclGraph* calls):

        with hccl.Graph(comm) as g:
            for grad in grads:
                g.all_reduce(grad)             # records; nothing is sent
            with g.compile() as step:          # every rank, once
                for batch in data:
                    ...                        # fill the grads
                    step.run()                 # every collective, in order

    The methods take Comm's arguments and check them as it does, but only
    record the call: the arrays are written by each Executable.run, which
    reads and writes them as they are then. The graph and its executables
    keep references to the arrays, so they stay alive; do not resize or
    reallocate them (arrays are never copied). broadcast records in place
    only, as it is written here. Compile checks that every rank recorded
    the same graph (Mismatch on every rank otherwise; a recording call
    that raised makes it raise that again here, and fail on the other
    ranks) and fuses small
    all_reduce calls into one; fuse_bytes caps a fused buffer (0: the
    library's default, negative: no fusion), the same on every rank.
    """

    def __init__(self, comm, fuse_bytes=0):
        self._comm, self.rank, self.size = comm, comm.rank, comm.size
        self._arrays, self._nodes, self._error = [], 0, None
        h = _c_graph()
        _check(_lib.hcclGraphCreate(comm._h, ctypes.byref(h)), comm._h)
        self._h = h
        if fuse_bytes:
            _check(_lib.hcclGraphSetFuseBytes(h, int(fuse_bytes)), comm._h)

    def _issue(self, name, args, arrays):
        if self._h is None:
            raise Closed(5, "hccl: the graph is closed")
        _check(getattr(_lib, "hcclGraph" + name)(*args, self._h), self._comm._h)
        self._arrays.extend(a for a in arrays if a is not None)
        self._nodes += 1

    def _failed(self, error):
        # The library keeps its own failures for hcclGraphCompile; these
        # are the checks made here, before it saw the call.
        if self._error is None and not isinstance(error, HcclError):
            text = str(error)
            text = text[len("hccl: "):] if text.startswith("hccl: ") else text
            self._error = type(error)("hccl: graph node %d: %s" % (self._nodes, text))

    def compile(self):
        """Every rank, with the same recorded calls: returns an Executable."""
        if self._h is None:
            raise Closed(5, "hccl: the graph is closed")
        e = _c_exec()
        if self._error is not None:
            # Compile all the same, so that the other ranks fail theirs
            # (the graphs differ) rather than wait for this one.
            if _lib.hcclGraphCompile(self._h, ctypes.byref(e)) == 0:
                _lib.hcclGraphExecDestroy(e)
            raise self._error
        _check(_lib.hcclGraphCompile(self._h, ctypes.byref(e)), self._comm._h)
        return Executable(self._comm, e, list(self._arrays))

    def close(self):
        """Releases the graph; executables compiled from it keep working."""
        if self._h is not None:
            h, self._h = self._h, None
            _check(_lib.hcclGraphDestroy(h), self._comm._h)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Executable:
    """A compiled Graph: run() replays its collectives, on every rank, as
    the calls would run; steps is how many a run makes after fusion."""

    def __init__(self, comm, h, arrays):
        self._comm, self._h, self._arrays = comm, h, arrays  # the arrays it reads and writes

    def _handle(self):
        if self._h is None:
            raise Closed(5, "hccl: the executable is closed")
        return self._h

    def run(self):
        _check(_lib.hcclGraphLaunch(self._handle()), self._comm._h)

    @property
    def steps(self):
        v = ctypes.c_int()
        _check(_lib.hcclGraphExecSteps(self._handle(), ctypes.byref(v)), self._comm._h)
        return v.value

    def close(self):
        if self._h is not None:
            h, self._h = self._h, None
            self._arrays = None
            _check(_lib.hcclGraphExecDestroy(h), self._comm._h)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _sized(a, want, what):
    if a.size != want:
        raise ValueError("hccl: %s has %d elements, want %d" % (what, a.size, want))


def empty(shape, dtype=np.float32):
    """An array in memory the rank's peers on this host can map
    (hcclMemAlloc): large payloads sent from it are copied once instead of
    read across processes. Freed when the array is garbage collected."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape)) * dtype.itemsize
    if n == 0:
        return np.empty(shape, dtype)
    p = ctypes.c_void_p()
    _check(_lib.hcclMemAlloc(ctypes.byref(p), n))
    raw = (ctypes.c_char * n).from_address(p.value)
    weakref.finalize(raw, _lib.hcclMemFree, ctypes.c_void_p(p.value))
    return np.frombuffer(raw, dtype=dtype).reshape(shape)


def version():
    """The library's HCCL_VERSION_CODE (major * 10000 + minor * 100 + patch)."""
    v = ctypes.c_int()
    _check(_lib.hcclGetVersion(ctypes.byref(v)))
    return v.value
