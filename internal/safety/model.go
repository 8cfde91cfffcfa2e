package safety

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// registerState is the resource's state as far as the counter goes: its
// value and the scope's floor.
type registerState struct {
	value int
	floor uint64
}

type registerInput struct {
	kind  OpKind
	token uint64
	value int
}

type registerOutput struct {
	accepted bool // write/fence: admitted; read: always true
	unknown  bool // the client never learned the outcome
	value    int  // read: the value read
}

// registerModel is the protected resource seen as one register with a
// fencing floor: a read returns the last accepted write; a write or fence
// is accepted iff its token is at least the floor (always, unfenced) and
// then raises the floor.
func registerModel(fenced bool) porcupine.Model {
	admits := func(s registerState, t uint64) bool { return !fenced || t >= s.floor }
	nm := porcupine.NondeterministicModel{
		Init: func() []any { return []any{registerState{}} },
		Step: func(state, input, output any) []any {
			s, in, out := state.(registerState), input.(registerInput), output.(registerOutput)
			switch in.kind {
			case OpRead:
				if out.value == s.value {
					return []any{s}
				}
				return nil
			case OpWrite, OpFence:
				applied := s
				applied.floor = max(s.floor, in.token)
				if in.kind == OpWrite {
					applied.value = in.value
				}
				switch {
				case out.unknown && admits(s, in.token):
					return []any{applied, s}
				case out.unknown:
					return []any{s}
				case out.accepted && admits(s, in.token):
					return []any{applied}
				case !out.accepted && !admits(s, in.token):
					return []any{s}
				}
				return nil
			}
			return nil
		},
		Equal: func(a, b any) bool { return a.(registerState) == b.(registerState) },
		DescribeOperation: func(input, output any) string {
			in, out := input.(registerInput), output.(registerOutput)
			switch {
			case in.kind == OpRead:
				return fmt.Sprintf("read() -> %d", out.value)
			case out.unknown:
				return fmt.Sprintf("%s(%d, token %d) -> ?", in.kind, in.value, in.token)
			}
			return fmt.Sprintf("%s(%d, token %d) -> accepted=%t", in.kind, in.value, in.token, out.accepted)
		},
		DescribeState: func(state any) string {
			s := state.(registerState)
			return fmt.Sprintf("value=%d floor=%d", s.value, s.floor)
		},
	}
	return nm.ToModel()
}
