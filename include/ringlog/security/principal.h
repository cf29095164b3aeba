#pragma once
// The caller's identity on every door (design.md section 3, "Security"): Kafka's KafkaPrincipal,
// `TYPE:NAME` (`User:alice`). One principal per Kafka connection or HTTP session, made by the
// front end's authenticator and passed down with every broker call.

#include <string>
#include <string_view>

#include "ringlog/security/errc.h"

namespace ringlog::security {

struct kafka_principal {
  /// Kafka's principal type; "User" for every authenticator ringlog has.
  std::string principal_type = "User";
  /// Kafka's name for an unauthenticated caller (a PLAINTEXT listener): `User:ANONYMOUS`.
  std::string name = "ANONYMOUS";

  /// `TYPE:NAME`, as Kafka prints it and as ACLs and `super.users` name it.
  [[nodiscard]] std::string to_string() const;
  [[nodiscard]] bool anonymous() const { return principal_type == "User" && name == "ANONYMOUS"; }
  friend bool operator==(const kafka_principal&, const kafka_principal&) = default;

  /// Parses `TYPE:NAME` (the name may hold further ':'). Errors: invalid_principal when there is
  /// no ':' or either side is empty (the message quotes the text).
  static result<kafka_principal> parse(std::string_view text);
  static kafka_principal user(std::string name) { return {"User", std::move(name)}; }
};

}  // namespace ringlog::security
