package placement_test

import (
	"fmt"
	"os"

	"github.com/hcclrun/hcclrun/launcher/placement"
)

// Open MPI's "mpirun -np 5 --map-by node -H a:4,b:4" would run ranks 0,2,4
// on a and 1,3 on b; the counts are the same here, the numbering is per
// host.
func ExampleMap() {
	hosts, err := placement.ParseHostList("a:4,b:4")
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := placement.Map(hosts, placement.Options{NP: 5, MapBy: placement.MapByNode})
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, n := range p.Nodes {
		fmt.Printf("node %d: %s ranks %d..%d\n", i, n.Host.Name, n.FirstRank, n.FirstRank+n.Ranks-1)
	}
	_, err = placement.Map(hosts, placement.Options{NP: 9})
	fmt.Println(err)
	// Output:
	// node 0: a ranks 0..2
	// node 1: b ranks 3..4
	// placement: 9 ranks requested but the 2 hosts have 8 slots (use --oversubscribe): not enough slots
}

func ExamplePlacement_DisplayMap() {
	hosts, _ := placement.ParseHostfile("hosts", []byte("n[1-2] slots=2\n"))
	p, _ := placement.Map(hosts, placement.Options{NP: 3})
	p.DisplayMap(os.Stdout)
	// Output:
	//  ========================   JOB MAP   ========================
	//  Mapping: 3 ranks on 2 hosts, map-by slot: each host's slots filled in turn
	//
	//  Data for node: n1	Num slots: 2	Max slots: none	Num procs: 2
	//  	Process rank: 0	Local rank: 0
	//  	Process rank: 1	Local rank: 1
	//
	//  Data for node: n2	Num slots: 2	Max slots: none	Num procs: 1
	//  	Process rank: 2	Local rank: 0
	//
	//  =============================================================
}
