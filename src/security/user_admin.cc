#include "ringlog/security/user_admin.h"

#include <algorithm>

namespace ringlog::security {

bool is_super_user(const std::vector<std::string>& super_users, const kafka_principal& principal) {
  return std::find(super_users.begin(), super_users.end(), principal.to_string()) != super_users.end();
}

std::optional<std::string> users_change_refusal(const std::vector<std::string>& super_users,
                                                const kafka_principal& caller, bool logged_in) {
  if (!logged_in || is_super_user(super_users, caller)) return std::nullopt;
  return caller.to_string() + " may not change users: only super.users may (set super.users=" + caller.to_string() +
         " to allow it)";
}

}  // namespace ringlog::security
