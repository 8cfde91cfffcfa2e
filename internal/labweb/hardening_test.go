package labweb

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A tab that reconnects after the lab restarted on the same address sends
// a Last-Event-ID this run never reached: it gets the state (with this
// run's id), not silence.
func TestEventsLastIDFromAnotherRun(t *testing.T) {
	_, srv := startLab(t, 3, Options{}, ServerConfig{})
	url := srv.URL()
	post(t, url, "put a 1")
	s := openStream(t, url, "999999")
	defer s.close()
	first := s.next(t)
	require.Equal(t, TypeState, first.Type)
	var st State
	require.NoError(t, json.Unmarshal([]byte(first.Data), &st))
	require.Len(t, st.Run, 16, "a run id")
	require.Less(t, first.ID, uint64(999999))
	// And the stream goes on from there.
	_, _, seq := post(t, url, "put b 2")
	s.until(t, func(e sse) bool { return e.ID == seq })
}

func TestCommandBodyLimits(t *testing.T) {
	_, srv := startLab(t, 1, Options{}, ServerConfig{})
	url := srv.URL()
	postRaw := func(body string) (int, string) {
		resp, err := client.Post(url+"api/command", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		msg, _ := m["error"].(string)
		return resp.StatusCode, msg
	}
	code, msg := postRaw(`{"line":"` + strings.Repeat("x", 70<<10) + `"}`)
	require.Equal(t, http.StatusRequestEntityTooLarge, code)
	require.Contains(t, msg, "64 KiB")
	code, msg = postRaw(`{"line":"put a 1"} garbage`)
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, msg, "trailing data")
	code, _ = postRaw(`{"line":"put a 1"}` + "\n")
	require.Equal(t, http.StatusOK, code, "a trailing newline is not garbage")
}

// The command log numbers commands from 1 in this run, in the events and
// in the state.
func TestCommandNumbers(t *testing.T) {
	lab, srv := startLab(t, 1, Options{}, ServerConfig{})
	url := srv.URL()
	post(t, url, "put a 1")
	post(t, url, "get a")
	b, _, err := lab.hub.State()
	require.NoError(t, err)
	var st State
	require.NoError(t, json.Unmarshal(b, &st))
	require.Len(t, st.Commands, 2)
	require.Equal(t, []uint64{1, 2}, []uint64{st.Commands[0].N, st.Commands[1].N})
}

func TestShortTokenRefused(t *testing.T) {
	lab, _ := startLab(t, 1, Options{}, ServerConfig{})
	_, err := NewServer(lab, ServerConfig{Addr: "0.0.0.0:0", Token: "short"})
	require.True(t, errors.Is(err, ErrTokenShort), "%v", err)
	srv, err := NewServer(lab, ServerConfig{Addr: "0.0.0.0:0", Token: "0123456789abcdef+"})
	require.NoError(t, err)
	defer srv.Close()
	u := srv.OpenURL("lab.example")
	require.True(t, strings.HasPrefix(u, "http://lab.example:"), u)
	require.True(t, strings.HasSuffix(u, "/?token=0123456789abcdef%2B"), u)
	require.True(t, strings.HasPrefix(srv.OpenURL(""), "http://127.0.0.1:"))
}
