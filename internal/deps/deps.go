// Package deps pins the module's chosen dependencies while the packages that
// use them are being written. Remove once every dependency is imported for real.
package deps

import (
	_ "github.com/anishathalye/porcupine"
	_ "github.com/cenkalti/backoff/v5"
	_ "github.com/chzyer/readline"
	_ "github.com/hashicorp/raft"
	_ "github.com/hashicorp/raft-boltdb"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/spf13/cobra"
	_ "go.etcd.io/etcd/client/v3"
	_ "go.etcd.io/etcd/client/v3/concurrency"
	_ "go.etcd.io/etcd/pkg/v3/proxy"
	_ "go.etcd.io/etcd/server/v3/embed"
)
