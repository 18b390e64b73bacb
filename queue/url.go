package queue

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
)

// ParseURL reads connection settings from a URL, as a program reads them from one
// setting (RETHINKDB_URL, say):
//
//	rethinkdb://[user[:password]@]host[:port][,host[:port]…][/db][?tls=true&tls_ca=/path/ca.pem&tls_server_name=name]
//
// The port defaults to 28015 and the database to rjqJobQueue; several hosts fill
// Addresses (a cluster). tls=true encrypts with the system's roots; tls_ca names a PEM
// file of roots instead (and implies tls); tls_server_name checks the server's
// certificate against another name. User and password are percent-decoded. Any other
// parameter is an error, so that a typo is not silently ignored.
func ParseURL(s string) (*ConnectOptions, error) {
	// url.Parse takes one host only: the hosts are cut out first and parsed here.
	hostList, s := cutHosts(s)
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%w: connection URL: %w (want rethinkdb://user:pass@host:port/db)", ErrInvalidOption, err)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: connection URL %s: %s", ErrInvalidOption, redact(u, hostList), fmt.Sprintf(format, args...))
	}
	if u.Scheme != "rethinkdb" {
		return nil, bad("want the scheme rethinkdb://")
	}
	if hostList == "" {
		return nil, bad("no host")
	}
	c := &ConnectOptions{}
	if u.User != nil {
		c.Username = u.User.Username()
		c.Password, _ = u.User.Password()
	}
	if db := strings.Trim(u.Path, "/"); db != "" {
		if strings.Contains(db, "/") {
			return nil, bad("the path is the database name, one element")
		}
		c.DB = db
	}
	hosts := strings.Split(hostList, ",")
	for _, h := range hosts {
		host, port, err := splitAddress(h)
		if err != nil {
			return nil, bad("%v", err)
		}
		addr := net.JoinHostPort(host, strconv.Itoa(port))
		if len(hosts) == 1 {
			c.Address = addr
		} else {
			c.Addresses = append(c.Addresses, addr)
		}
	}
	if err := applyTLSParams(c, u.Query(), bad); err != nil {
		return nil, err
	}
	return c, nil
}

// applyTLSParams sets c.TLS from the URL's parameters q (tls, tls_ca, tls_server_name),
// and refuses any other parameter, or tls=false beside the other two, with bad.
func applyTLSParams(c *ConnectOptions, q url.Values, bad func(format string, args ...any) error) error {
	var useTLS bool
	for key, vals := range q {
		v := vals[len(vals)-1]
		switch key {
		case "tls":
			var err error
			if useTLS, err = strconv.ParseBool(v); err != nil {
				return bad("tls=%q: want true or false", v)
			}
		case "tls_ca":
			pem, err := os.ReadFile(v)
			if err != nil {
				return bad("tls_ca: %v", err)
			}
			roots := x509.NewCertPool()
			if !roots.AppendCertsFromPEM(pem) {
				return bad("tls_ca %s: no PEM certificate in it", v)
			}
			c.TLS = cmpTLS(c.TLS)
			c.TLS.RootCAs = roots
		case "tls_server_name":
			c.TLS = cmpTLS(c.TLS)
			c.TLS.ServerName = v
		default:
			return bad("unknown parameter %q (known: tls, tls_ca, tls_server_name)", key)
		}
	}
	if useTLS {
		c.TLS = cmpTLS(c.TLS)
	} else if q.Has("tls") && c.TLS != nil {
		return bad("tls=false with tls_ca or tls_server_name")
	}
	return nil
}

// cutHosts cuts the host list out of a rethinkdb:// URL, leaving a placeholder host in
// its place, so that the rest parses as a URL.
func cutHosts(s string) (hosts, rest string) {
	const scheme = "rethinkdb://"
	after, ok := strings.CutPrefix(s, scheme)
	if !ok {
		return "", s
	}
	end := strings.IndexAny(after, "/?#")
	if end < 0 {
		end = len(after)
	}
	authority := after[:end]
	user := ""
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		user, authority = authority[:at+1], authority[at+1:]
	}
	if authority == "" {
		return "", s
	}
	return authority, scheme + user + "host" + after[end:]
}

// cmpTLS is t, or a new TLS configuration when t is nil.
func cmpTLS(t *tls.Config) *tls.Config {
	if t == nil {
		return &tls.Config{MinVersion: tls.VersionTLS12}
	}
	return t
}

// redact is u, with its hosts, without its password, for messages.
func redact(u *url.URL, hosts string) string {
	r := *u
	r.Host = hosts
	return r.Redacted()
}

// splitAddress splits "host:port", or a bare host (port 28015).
func splitAddress(s string) (string, int, error) {
	if s == "" {
		return "", 0, errors.New("empty address")
	}
	host, p, err := net.SplitHostPort(s)
	if err != nil {
		var ae *net.AddrError
		if errors.As(err, &ae) && strings.Contains(ae.Err, "missing port") {
			return strings.Trim(s, "[]"), DefaultPort, nil
		}
		return "", 0, fmt.Errorf("address %q: want host:port", s)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 1 || port > 65535 || host == "" {
		return "", 0, fmt.Errorf("address %q: want host:port with a port of 1 to 65535", s)
	}
	return host, port, nil
}
