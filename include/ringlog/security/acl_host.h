#pragma once
// ACL hosts in one form (issue 30): what an ACL names and what a door reports of its client
// compare as text, so both are brought to this form first.

#include <optional>
#include <string>
#include <string_view>

namespace ringlog::security {

/// An ACL host in the one form every door compares: `*` as is; an IPv4 address in dotted form;
/// an IPv6 address in RFC 5952's compressed form ("::1", not Java's "0:0:0:0:0:0:0:1"); an
/// IPv4-mapped IPv6 address as its IPv4 address ("::ffff:127.0.0.1" is "127.0.0.1", as Kafka's
/// InetAddress shows a dual-stack socket's IPv4 client). nullopt when `text` is none of these
/// (validate_acl refuses such a host).
std::optional<std::string> canonical_acl_host(std::string_view text);

}  // namespace ringlog::security
