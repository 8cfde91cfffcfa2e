package sidecar

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coordkit/coordkit/internal/httpguard"
)

// ResignRequest is what `coordctl sidecar resign` asks of a running
// sidecar: POST /v1/resign at URL, with the token of APITokenFile if
// given, within Timeout.
type ResignRequest struct {
	URL          string
	APITokenFile string
	Timeout      time.Duration
	// Client sends the request; http.DefaultClient when nil.
	Client *http.Client
}

// EnvURL names the variable that gives the sidecar's API when no URL is.
const EnvURL = "COORDCTL_SIDECAR_URL"

// DefaultURL is the sidecar's API when neither a URL nor EnvURL is given:
// the default --listen.
const DefaultURL = "http://127.0.0.1:4040"

// WithDefaults is r with an empty URL filled in from getenv(EnvURL), else
// DefaultURL.
func (r ResignRequest) WithDefaults(getenv func(string) string) ResignRequest {
	if r.URL == "" {
		r.URL = getenv(EnvURL)
	}
	if r.URL == "" {
		r.URL = DefaultURL
	}
	return r
}

// ResignResult is the sidecar's answer: Resigned, or not (Reason: it did
// not lead), with its view either way. Its JSON form is what `coordctl
// sidecar resign -w json` prints.
type ResignResult struct {
	Resigned bool   `json:"resigned"`
	Reason   string `json:"reason,omitempty"`
	View     View   `json:"state"`
}

func (r ResignResult) String() string {
	if r.Resigned {
		return "resigned id=" + r.View.ID
	}
	return fmt.Sprintf("not resigned id=%s: %s", r.View.ID, r.Reason)
}

// endpoint checks the request (errors match ErrUsage) and returns the
// resign URL and the token.
func (r ResignRequest) endpoint() (string, string, error) {
	u, err := url.Parse(r.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", "", usagef("invalid --url %q: want http://HOST:PORT", r.URL)
	}
	if r.Timeout <= 0 {
		return "", "", usagef("invalid --timeout %s: must be positive", r.Timeout)
	}
	token := ""
	if r.APITokenFile != "" {
		if token, err = httpguard.ReadTokenFile(r.APITokenFile); err != nil {
			return "", "", usagef("invalid --api-token-file: %v", err)
		}
	}
	return strings.TrimSuffix(u.String(), "/") + "/v1/resign", token, nil
}

// Validate reports a request that cannot be sent: a URL that is not
// http(s)://HOST, a timeout that is not positive, an unreadable token
// file. Its errors match ErrUsage.
func (r ResignRequest) Validate() error {
	_, _, err := r.endpoint()
	return err
}

// Resign sends the request. A 200 is Resigned, a 409 (this instance does
// not lead) is not, with the sidecar's reason; anything else, or no
// answer, is an error naming the endpoint.
func Resign(ctx context.Context, r ResignRequest) (ResignResult, error) {
	endpoint, token, err := r.endpoint()
	if err != nil {
		return ResignResult{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader([]byte("{}")))
	if err != nil {
		return ResignResult{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := r.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return ResignResult{}, fmt.Errorf("sidecar resign: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return ResignResult{}, fmt.Errorf("sidecar resign: %s: %w", endpoint, err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
		var v View
		if err := json.Unmarshal(body, &v); err != nil {
			return ResignResult{}, fmt.Errorf("sidecar resign: %s answered %q: %w", endpoint, body, err)
		}
		return ResignResult{Resigned: true, View: v}, nil
	case http.StatusConflict:
		var e struct {
			Error string `json:"error"`
			View  View   `json:"state"`
		}
		if err := json.Unmarshal(body, &e); err != nil {
			return ResignResult{}, fmt.Errorf("sidecar resign: %s answered %q: %w", endpoint, body, err)
		}
		return ResignResult{Reason: e.Error, View: e.View}, nil
	default:
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(body, &e)
		if e.Error == "" {
			e.Error = strings.TrimSpace(string(body))
		}
		return ResignResult{}, fmt.Errorf("sidecar resign: %s answered %s: %s", endpoint, resp.Status, e.Error)
	}
}
