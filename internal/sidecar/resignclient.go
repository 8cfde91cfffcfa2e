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
)

// ResignRequest is what `coordctl sidecar resign` asks of a running
// sidecar: POST /v1/resign at URL (http or https, HOST[:PORT]), with Token
// as a bearer token if given, within Timeout. With To it is a handover,
// POST /v1/resign?to=To: a candidate's id, or ResignToBest for the one the
// election's policy prefers among the others.
type ResignRequest struct {
	URL     string
	Token   string
	Timeout time.Duration
	To      string
	// Client sends the request; http.DefaultClient when nil.
	Client *http.Client
}

// ResignToBest is ResignRequest.To for the candidate the election's policy
// prefers (to=best).
const ResignToBest = "best"

// ResignResult is the sidecar's answer: Resigned, or not (Reason: it did
// not lead, say), with its view either way. A handover whose target left
// at the last moment is Resigned with a Reason (the next in line leads).
// Its JSON form is what `coordctl sidecar resign -w json` prints.
type ResignResult struct {
	Resigned bool   `json:"resigned"`
	Reason   string `json:"reason,omitempty"`
	View     View   `json:"state"`
}

func (r ResignResult) String() string {
	if r.Resigned && r.Reason != "" {
		return fmt.Sprintf("resigned id=%s: %s", r.View.ID, r.Reason)
	}
	if r.Resigned {
		return "resigned id=" + r.View.ID
	}
	return fmt.Sprintf("not resigned id=%s: %s", r.View.ID, r.Reason)
}

// ResignURL is the resign endpoint of the sidecar whose API is at api, or
// an error saying why api is not an http(s)://HOST[:PORT] URL.
func ResignURL(api string) (string, error) {
	u, err := url.Parse(api)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%q is not a sidecar's URL: want http://HOST:PORT", api)
	}
	return strings.TrimSuffix(u.String(), "/") + "/v1/resign", nil
}

// Resign sends the request. A 200 is Resigned, a 409 is not, with the
// sidecar's reason: this instance does not lead (nothing to do), or a
// handover is blocked by a foreign candidate (it keeps leading); so is a
// 404 to ResignToBest (no other candidate to hand over to). Anything else,
// a 404 for a named candidate among them, or no answer, is an error naming
// the endpoint.
func Resign(ctx context.Context, r ResignRequest) (ResignResult, error) {
	endpoint, err := ResignURL(r.URL)
	if err != nil {
		return ResignResult{}, err
	}
	if r.To != "" {
		endpoint += "?to=" + url.QueryEscape(r.To)
	}
	if r.Timeout <= 0 {
		return ResignResult{}, fmt.Errorf("sidecar resign: timeout %s: must be positive", r.Timeout)
	}
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader([]byte("{}")))
	if err != nil {
		return ResignResult{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	if r.Token != "" {
		req.Header.Set("Authorization", "Bearer "+r.Token)
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
	switch code := resp.StatusCode; {
	case code == http.StatusOK:
		var v View
		if err := json.Unmarshal(body, &v); err != nil {
			return ResignResult{}, fmt.Errorf("sidecar resign: %s answered %q: %w", endpoint, body, err)
		}
		// A handover whose target left at the last moment resigned too
		// (the next in line leads): 200 with the error's shape.
		var gone apiError
		if json.Unmarshal(body, &gone) == nil && gone.View != nil {
			return ResignResult{Resigned: true, Reason: gone.Error, View: *gone.View}, nil
		}
		return ResignResult{Resigned: true, View: v}, nil
	case code == http.StatusConflict, code == http.StatusNotFound && r.To == ResignToBest:
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
