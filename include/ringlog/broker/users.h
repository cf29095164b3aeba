#pragma once
// SCRAM users as the broker API shows them (KIP-554: DescribeUserScramCredentials,
// AlterUserScramCredentials). Credentials are UserScramCredentialRecords in the metadata log,
// applied on every node (controller/metadata_image.h); the Kafka listener's SASL mechanisms read
// them through broker::security().scram_lookup() (security.h). Secrets (salt, stored key, server key) never leave the
// broker through these calls: a description names mechanisms and iteration counts only.

#include <optional>
#include <string>
#include <vector>

#include "ringlog/security/scram.h"

namespace ringlog::broker {

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
};

}  // namespace ringlog::broker
