//go:build race

package cluster

// raceEnabled: github.com/boltdb/bolt, under raft-boltdb v1, fails Go's
// checkptr (on under -race) when it opens a database, so disk storage is
// tested only without the race detector.
const raceEnabled = true
