package fencing

import (
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// DefaultURL is where 'coordctl resource serve' listens unless told otherwise.
const DefaultURL = "http://127.0.0.1:7070"

// ClientConfig configures NewClient.
type ClientConfig struct {
	// URL is the resource's base URL: http:// or https:// and a host. Required.
	URL string
	// Timeout bounds each request, from dialing to the end of the answer.
	// Required: positive.
	Timeout time.Duration
}

// Validate checks the config: ErrInvalidURL, ErrInvalidTimeout.
func (c ClientConfig) Validate() error {
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w %q: want http://host:port", ErrInvalidURL, c.URL)
	}
	if c.Timeout <= 0 {
		return fmt.Errorf("%w %s: must be positive", ErrInvalidTimeout, c.Timeout)
	}
	return nil
}

// NewClient returns a Client of cfg.URL with a connection pool of its own,
// which CloseIdleConnections releases. Errors are Validate's.
func NewClient(cfg ClientConfig) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	return &Client{BaseURL: cfg.URL, HTTP: &http.Client{Transport: tr, Timeout: cfg.Timeout}}, nil
}

// CloseIdleConnections closes the idle connections of c.HTTP; with a nil
// HTTP (http.DefaultClient, shared) it does nothing.
func (c *Client) CloseIdleConnections() {
	if c.HTTP != nil {
		c.HTTP.CloseIdleConnections()
	}
}
