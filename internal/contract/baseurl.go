package contract

import (
	"fmt"
	"net/url"
	"strings"
)

// NormalizeBaseURL checks that raw is an http or https URL with a host and no credentials, and
// returns it with its scheme and host in lower case and no trailing slash, so two spellings of one
// base URL compare equal. It lives here, beside Endpoint, because the configuration checks the
// base URLs of gateway.keys with it when it loads, the starter a session's --base-url, and the
// worker the base URL a model call is sent to: all three must agree.
func NormalizeBaseURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	switch {
	case err != nil:
		return "", fmt.Errorf("the base URL %q does not parse: %v", raw, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("the base URL %q is not an http or https URL", raw)
	case u.Host == "" || u.Hostname() == "":
		return "", fmt.Errorf("the base URL %q names no host", raw)
	case u.User != nil:
		return "", fmt.Errorf("the base URL %q carries credentials; name a key instead (--api-key-ref), keys never go into a session's history", u.Redacted())
	case u.RawQuery != "" || u.Fragment != "":
		return "", fmt.Errorf("the base URL %q has a query or fragment", raw)
	}
	u.Scheme, u.Host = strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	return strings.TrimRight(u.String(), "/"), nil
}
