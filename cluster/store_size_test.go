package cluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestStoredNodesRefusesAnotherSize(t *testing.T) {
	dir := t.TempDir()
	if n, err := StoredNodes(filepath.Join(dir, "none")); n != 0 || err != nil {
		t.Fatalf("no dir: %d, %v", n, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := DefaultConfig()
	cfg.Nodes, cfg.Storage, cfg.DataDir = 1, StorageDisk, dir
	c, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if n, err := StoredNodes(dir); n != 1 || err != nil {
		t.Fatalf("StoredNodes = %d, %v; want 1", n, err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "node9-not-a-node"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg.Nodes = 3
	_, err = New(ctx, cfg)
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "holds a 1-node cluster, not 3") {
		t.Fatalf("New with 3 nodes on a 1-node store: %v", err)
	}
	cfg.Nodes = 1
	c, err = New(ctx, cfg)
	if err != nil {
		t.Fatalf("the same size again: %v", err)
	}
	c.Close()
}
