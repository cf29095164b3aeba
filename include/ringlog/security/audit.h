#pragma once
// The audit lines of issue 29, one per failed authentication and one per admin write (topics,
// configs, users, reassignments, elections, group deletes and offset resets), the same on every
// door (http, ws, kafka), logfmt with `audit=` first so one grep finds them all. Pure: the door
// logs the line (spdlog, at warn for refusals and info for writes).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "ringlog/security/acl.h"
#include "ringlog/security/principal.h"

namespace ringlog::security {

/// `audit=authentication door=http principal="User:bob" peer=127.0.0.1:50312 reason="..."`;
/// `claimed` is the user the caller named (User:ANONYMOUS when none).
std::string audit_failed_authentication_line(std::string_view door, std::string_view claimed, std::string_view peer,
                                             std::string_view reason);
/// `audit=admin door=http principal="User:alice" peer=... operation="DELETE topic" resource="orders" status=204`.
std::string audit_admin_write_line(std::string_view door, const kafka_principal& principal, std::string_view peer,
                                   std::string_view operation, std::string_view resource, std::string_view outcome);

/// The longest a client-chosen field of a denial line may be, bytes (a topic name is at most 249, a
/// principal or client id is the client's choice): past it the field is cut and says how much was
/// left out, so 50 lines a second stay a few KiB (the breaker's 60 KB names wrote 3 MB/s).
inline constexpr size_t audit_field_bytes_max = 256;
/// `text` logfmt-escaped, cut at audit_field_bytes_max ("...(N more bytes)").
std::string audit_clipped(std::string_view text);

/// `audit=authorization msg="authorization denied" door=kafka principal="User:bob" host=127.0.0.1
/// operation=READ resource="TOPIC:secret" api="Fetch"`: a refused request (Kafka's authorizer
/// logs each denial at INFO; filters of lists are not refusals and are not logged).
std::string audit_authorization_denied_line(std::string_view door, const kafka_principal& principal, std::string_view host,
                                            const acl_action& action, std::string_view request);

/// How many denial lines a door writes per second at most: a client refused in a loop (a consumer
/// retrying a Fetch without READ every 100 ms, thousands of them) must not flood the log or cost
/// the broker its disk; the lines past it are counted and the count is logged once the second
/// is over (audit_denials_suppressed_line).
inline constexpr int64_t audit_denial_lines_per_second_max = 50;

/// A door's denial-line budget (thread safe): admit(now_s) says whether a line may be written in
/// second `now_s`; when a new second starts it returns the lines refused in the last one.
class audit_denial_budget {
 public:
  struct verdict {
    bool log = false;            // write this denial's line
    int64_t suppressed = 0;      // lines refused in the previous second(s): log the count first
  };
  verdict admit(int64_t now_s);

 private:
  std::atomic<int64_t> second_{-1};
  std::atomic<int64_t> written_{0};
  std::atomic<int64_t> suppressed_{0};
};

/// `audit=authorization msg="authorization denials not logged" door=http count=812`.
std::string audit_denials_suppressed_line(std::string_view door, int64_t count);

}  // namespace ringlog::security
