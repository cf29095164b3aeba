#pragma once
// SCRAM users as the broker API shows them (KIP-554: DescribeUserScramCredentials,
// AlterUserScramCredentials). Credentials are UserScramCredentialRecords in the metadata log,
// applied on every node (controller/metadata_image.h); the Kafka listener's SASL mechanisms read
// them through broker::security().scram_lookup() (security.h). Secrets (salt, stored key, server key) never leave the
// broker through these calls: a description names mechanisms and iteration counts only.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ringlog/security/scram.h"

namespace ringlog::broker {

/// The reserved name of the cluster's forwarding secret (security/forwarded_call.h): a
/// UserScramCredentialRecord the active controller commits once (mechanism SCRAM-SHA-512,
/// iterations forwarding_secret_iterations, the secret as its stored key), so the secret is in
/// the metadata log and its snapshots on every node without a record type of its own. It is no
/// user: describe_users never lists it, alter_user_scram_credentials refuses it and no SASL or
/// Basic login can use it.
inline constexpr std::string_view forwarding_secret_user = "__ringlog_forwarding_secret";
/// The iteration count that marks the record as the secret: 0, below every user's
/// (security::constants::scram_iterations_min), so no credential a user set can pass for it.
inline constexpr int32_t forwarding_secret_iterations = 0;

struct user_scram_credential_info {
  security::scram_mechanism mechanism = security::scram_mechanism::sha_512;
  int32_t iterations = 0;
};

struct user_description {
  std::string user;
  std::vector<user_scram_credential_info> credentials;   // by mechanism type, ascending
};

/// One change of AlterUserScramCredentials: an upsertion (credential set) or a deletion (nullopt).
struct scram_credential_alteration {
  std::string user;
  security::scram_mechanism mechanism = security::scram_mechanism::sha_512;
  std::optional<security::scram_credential> credential;
  /// An upsertion that applies only while the user has no credential of `mechanism` (`serve
  /// --add-scram`): checked where every node applies the entry, so of two nodes that add one user
  /// at once, the entry later in the log is refused (the commit's error) and changes nothing.
  bool create_only = false;
};

}  // namespace ringlog::broker
