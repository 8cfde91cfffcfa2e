package deps

import (
	"testing"

	_ "github.com/stretchr/testify/require"
	_ "go.uber.org/goleak"
	_ "pgregory.net/rapid"
)

func TestNothing(t *testing.T) {}
