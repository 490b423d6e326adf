package ranktable_test

import (
	"fmt"
	"os"

	"github.com/hcclrun/hcclrun/ranktable"
)

func ExampleGenerate() {
	t, err := ranktable.Generate(ranktable.Spec{
		JobID:       "job-1",
		ControlAddr: "10.0.0.1:29500",
		Servers: []ranktable.ServerSpec{
			{ID: "node1", HostAddr: "10.0.0.1", Ranks: 2, CPUs: []int{0, 1, 2, 3}},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	data, _ := t.Marshal()
	os.Stdout.Write(data)
	// Output:
	// {
	//   "status": "completed",
	//   "version": "1.0",
	//   "server_count": "1",
	//   "server_list": [
	//     {
	//       "server_id": "node1",
	//       "host_addr": "10.0.0.1",
	//       "device": [
	//         {
	//           "device_id": "0",
	//           "device_ip": "10.0.0.1",
	//           "rank_id": "0",
	//           "local_rank": "0",
	//           "cpu_list": "0-1"
	//         },
	//         {
	//           "device_id": "1",
	//           "device_ip": "10.0.0.1",
	//           "rank_id": "1",
	//           "local_rank": "1",
	//           "cpu_list": "2-3"
	//         }
	//       ]
	//     }
	//   ],
	//   "job_id": "job-1",
	//   "control_addr": "10.0.0.1:29500"
	// }
}

func ExampleTable_Validate() {
	t, _ := ranktable.Parse([]byte(`{"status": "completed", "version": "1.0", "server_count": "1",
		"server_list": [{"server_id": "10.0.0.10", "device": [
			{"device_id": "0", "device_ip": "192.168.100.101", "rank_id": "0"},
			{"device_id": "1", "device_ip": "192.168.101.101", "rank_id": "2"}]}]}`))
	fmt.Println(t.Validate())
	// Output:
	// server_list[0].device[1].rank_id: "2" is out of range (the table has 2 ranks)
}
