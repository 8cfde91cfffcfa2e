package agentcmd

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/coordkit/coordkit/internal/etcdembed/etcdtest"
)

func TestMain(m *testing.M) {
	code := etcdtest.Main(m, nil)
	if binPath != "" {
		_ = os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}
