#pragma once
// Where the JWKS of sasl.oauthbearer.jwks.endpoint.url comes from (issue 29, KIP-768): a file:
// URL is read, an https:// one fetched with Boost.Beast over OpenSSL. The validator
// (security/jwt.h) only takes the text; reading and fetching belong to the app.

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "ringlog/base/result.h"

namespace ringlog::app {

/// Connect, TLS handshake, request and answer of one JWKS fetch together must be done within
/// this: an identity provider answers in well under a second, and a fetch that hangs must not
/// hold the refresh thread (or the start) for long.
inline constexpr int64_t jwks_fetch_timeout_ms = 10'000;

enum class jwks_errc {
  bad_url,        // not file: or https://HOST[:PORT]/PATH
  cannot_read,    // a file: URL: missing, unreadable, larger than security::jwks_bytes_max
  cannot_fetch,   // an https:// URL: resolve, connect, certificate, status, size, timeout, shutdown
};
using jwks_error = base::error<jwks_errc>;

/// An https://HOST[:PORT]/PATH URL split up; port 443 when not given, target "/" when no path.
struct https_url {
  std::string host;     // a name, an IPv4 address, or an IPv6 address without its brackets
  std::string port;
  std::string target;   // the path and query, from the first '/'
};

/// Splits an https:// URL. Errors (bad_url, a message naming the URL): another scheme, no host, user
/// info (user@host), a port that is not 1..65535.
base::result<https_url, jwks_error> parse_https_url(std::string_view url);

/// What an https fetch trusts besides the system's CAs.
struct jwks_trust {
  std::string truststore_location;   // ssl.truststore.location: a PEM file of CA certificates; "" = none
};

/// The JWKS text at `url`: file:PATH / file:///PATH is read (at most security::jwks_bytes_max
/// bytes); https://HOST[:PORT]/PATH is fetched with GET: the server's certificate must chain to
/// the system's CAs or to trust.truststore_location and name HOST (its DNS name or IP address),
/// TLS 1.2 or later; the answer must be 200 with a body of at most security::jwks_bytes_max
/// bytes; redirects are not followed; everything within jwks_fetch_timeout_ms. `stopping` set
/// (by another thread) ends a fetch within about 100 ms. Errors: jwks_errc, the message naming
/// the URL and the reason (cannot resolve/connect, certificate not trusted, status, too large,
/// timed out).
base::result<std::string, jwks_error> read_jwks(const std::string& url, const jwks_trust& trust,
                                                 const std::atomic<bool>& stopping);

}  // namespace ringlog::app
