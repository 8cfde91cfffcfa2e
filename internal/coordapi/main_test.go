package coordapi

import (
	"os"
	"testing"

	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
)

var etcd etcdtest.Shared

func TestMain(m *testing.M) { os.Exit(etcdtest.Main(m, &etcd)) }
