// Package ranktable is the rank table: the JSON file hcclrun writes for every
// job and every rank reads at Init (HCCL_RANK_TABLE_FILE).
//
// The format is HCCL's rank table version 1.0, so that tools and scripts
// written for Ascend jobs can read ours and a plain HCCL table can be read by
// us:
//
//	{
//	  "status": "completed",
//	  "version": "1.0",
//	  "server_count": "2",
//	  "server_list": [
//	    {"server_id": "10.0.0.1", "device": [
//	      {"device_id": "0", "device_ip": "192.168.1.1", "rank_id": "0"}, ...]},
//	    ...]
//	}
//
// All values are JSON strings, as in HCCL. The ranks of one server are
// contiguous and, in our tables, numbered in server order, so that a rank's
// position in the file is its rank. CPU jobs need a few facts HCCL does not
// carry; they are optional fields, absent from HCCL tables:
//
//   - job_id, control_addr (top level): the job and the launcher's control
//     plane endpoint (host:port);
//   - host_addr (per server): the IP address the launcher and the peers
//     reach the server on;
//   - local_rank, cpu_list (per device): the rank's index on its server and
//     the CPUs it is bound to, in Linux cpulist syntax ("0-1,4").
//
// Unknown fields are ignored, since HCCL tables carry more than we use.
//
// Reading is two steps: Parse decodes (and fails only on malformed JSON or a
// value of the wrong JSON type), Validate checks the contract. ReadFile does
// both. Every error names the offending field by its path in the document,
// e.g. server_list[1].device[0].rank_id, and quotes the value.
//
// A Table is a plain value: it is not safe for concurrent mutation, but any
// number of goroutines may call its accessors once nobody writes to it.
package ranktable
