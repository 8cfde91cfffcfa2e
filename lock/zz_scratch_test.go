package lock_test

import (
	"context"
	"os"
	"runtime/pprof"
	"testing"
	"time"

	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/coordkit/coordkit/lock"
)

func TestZZScratchAllocs(t *testing.T) {
	if os.Getenv("ZZ") == "" {
		t.Skip()
	}
	ns, cli := etcd.StartWithClient(t)
	_ = ns
	ctx := context.Background()
	m, err := lock.New(cli, "zz", lock.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s, err := concurrency.NewSession(cli, concurrency.WithTTL(10))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cm := concurrency.NewMutex(s, "zc")
	ck := func() {
		h, err := m.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cc := func() {
		if err := cm.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := cm.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	ck()
	cc()
	t.Logf("coordkit allocs/op %.1f", testing.AllocsPerRun(500, ck))
	t.Logf("concurrency allocs/op %.1f", testing.AllocsPerRun(500, cc))
	f, _ := os.Create("/tmp/scratch/ck.prof")
	pprof.StartCPUProfile(f)
	for range 3000 {
		ck()
	}
	pprof.StopCPUProfile()
	f.Close()
}
