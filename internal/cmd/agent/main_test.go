package agentcmd

import (
	"os"
	"testing"

	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
	"github.com/coordkit/coordkit/internal/testbin"
)

func TestMain(m *testing.M) {
	code := etcdtest.Main(m, nil)
	testbin.Remove()
	os.Exit(code)
}
