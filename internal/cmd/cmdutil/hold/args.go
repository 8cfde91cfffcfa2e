package hold

import "fmt"

// NameAndCommand splits the arguments of `coordctl lock` and `sem`: NAME
// (or nameFlag, the value of --name), then the command after "--". dash is
// the index of "--" among args (cobra's ArgsLenAtDash: -1 without one);
// what names the command in errors, which the caller reports as usage
// errors.
func NameAndCommand(what string, args []string, dash int, nameFlag string) (string, []string, error) {
	if nameFlag != "" {
		switch {
		case dash < 0 && len(args) > 0:
			return "", nil, fmt.Errorf("unexpected argument %q: with --name, put the command after --", args[0])
		case dash > 0:
			return "", nil, fmt.Errorf("unexpected argument %q: give the NAME once (--name or argument), then the command after --", args[0])
		}
		return nameFlag, args, nil
	}
	switch {
	case len(args) == 0 || dash == 0:
		return "", nil, fmt.Errorf("%s needs a NAME", what)
	case dash < 0 && len(args) > 1:
		return "", nil, fmt.Errorf("unexpected argument %q: put the command after --", args[1])
	case dash > 1:
		return "", nil, fmt.Errorf("unexpected argument %q: give one NAME, then the command after --", args[1])
	}
	return args[0], args[1:], nil
}
