// Package pmi2 is a client of the PMI-2 wire protocol, the one Slurm's
// mpi/pmi2 plugin (srun --mpi=pmi2) speaks to every task over the socket
// whose descriptor it passes in PMI_FD: it is how a program started by
// srun, with no hcclrun, learns its rank, the job's size and layout, and
// exchanges a few values with the other tasks.
//
// The protocol, as slurmstepd serves it:
//
//   - The task opens with one PMI-1 line, "cmd=init pmi_version=2
//     pmi_subversion=0\n", written at once (the server reads it with a
//     single read), and gets "cmd=response_to_init rc=0 pmi_version=2
//     pmi_subversion=0\n".
//   - From then on every message, both ways, is a 6-byte decimal length
//     (left-justified, space-padded) and that many bytes of
//     "cmd=NAME;key=value;...;". A ';' inside a value is doubled (MPICH's
//     escape; Slurm itself never sends one).
//   - fullinit (pmijobid, pmirank, threaded) answers rank, size, appnum;
//     kvs-put stores a pair locally, kvs-fence is a barrier of every task
//     after which everything put before it is visible, kvs-get reads a
//     pair; info-getjobattr reads a job attribute such as
//     PMI_process_mapping, the ranks of each node; finalize ends the
//     session (the server closes the socket).
//
// A Client is not safe for concurrent use: PMI-2 is one request, one
// answer, in order. Keys are at most 64 bytes, values at most 1024.
package pmi2
