#pragma once
// Who may administer SCRAM users (issue 29): the one rule the Kafka door (AlterUserScramCredentials)
// and the HTTP door (/v3/clusters/{id}/users) share when no authorizer is set.

#include <optional>
#include <string>
#include <vector>

#include "ringlog/security/principal.h"

namespace ringlog::security {

/// Whether `principal` is one of `super_users` (super.users as parsed: `User:name` texts).
bool is_super_user(const std::vector<std::string>& super_users, const kafka_principal& principal);

/// Who may change SCRAM users when no authorizer is set (issue 29), one rule for the Kafka and HTTP
/// doors: a caller that logged in (SASL, HTTP Basic or Bearer, a mapped client certificate) only as
/// one of super.users, so a password of one door cannot be turned into another user's; a caller
/// that did not log in (a PLAINTEXT listener, HTTP without authentication) is not asked. nullopt:
/// allowed; else the refusal's text, naming the caller and the setting that would allow it. With
/// an authorizer, ALTER on the cluster decides instead (Kafka's AlterUserScramCredentials).
std::optional<std::string> users_change_refusal(const std::vector<std::string>& super_users,
                                                const kafka_principal& caller, bool logged_in);

}  // namespace ringlog::security
