#pragma once
// The audit lines of issue 29, one per failed authentication and one per admin write (topics,
// configs, users, reassignments, elections, group deletes and offset resets), the same on every
// door (http, ws, kafka), logfmt with `audit=` first so one grep finds them all. Pure: the door
// logs the line (spdlog, at warn for refusals and info for writes).

#include <string>
#include <string_view>

#include "ringlog/security/principal.h"

namespace ringlog::security {

/// `audit=authentication door=http principal="User:bob" peer=127.0.0.1:50312 reason="..."`;
/// `claimed` is the user the caller named (User:ANONYMOUS when none).
std::string audit_failed_authentication_line(std::string_view door, std::string_view claimed, std::string_view peer,
                                             std::string_view reason);
/// `audit=admin door=http principal="User:alice" peer=... operation="DELETE topic" resource="orders" status=204`.
std::string audit_admin_write_line(std::string_view door, const kafka_principal& principal, std::string_view peer,
                                   std::string_view operation, std::string_view resource, std::string_view outcome);

}  // namespace ringlog::security
