package safety

import (
	"fmt"
	"strconv"
	"strings"
)

// FormatValue encodes the counter as the workload stores it in the
// protected resource: the value, a space, and the id of the write that set
// it, so that the resource's log can be matched to client operations.
// Every writer of the counter (the in-process clients and coordctl check
// rmw) encodes with it, and the checker decodes with ParseValue.
func FormatValue(v int, id string) string { return strconv.Itoa(v) + " " + id }

// ParseValue decodes what FormatValue encoded. A value without an id
// decodes with id "". It returns an error when the value is not a number;
// the value is then 0.
func ParseValue(s string) (v int, id string, err error) {
	num, id, _ := strings.Cut(s, " ")
	v, err = strconv.Atoi(num)
	if err != nil {
		return 0, id, fmt.Errorf("safety: counter value %q: %w", s, err)
	}
	return v, id, nil
}
