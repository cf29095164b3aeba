// SCRAM users (KIP-554): UserScramCredentialRecords in the metadata log, described without their
// secrets, altered through the controller, read by the SASL mechanisms from the shard's image.

#include <algorithm>
#include <set>

#include "constants.h"
#include "cluster_requests.h"
#include "metadata_barrier.h"
#include "metadata_publisher.h"
#include "security_manager.h"

namespace ringlog::broker::detail {

namespace {

int8_t mechanism_type(security::scram_mechanism m) { return static_cast<int8_t>(m); }

/// Kafka's checks of one change (ScramControlManager), before the image is consulted.
result<void> check_alteration(const scram_credential_alteration& change) {
  if (change.user.empty()) return error{errc::unacceptable_credential, "user name must not be empty"};
  // ANONYMOUS is the name of every caller that did not log in (Kafka's User:ANONYMOUS): a user of
  // that name would hold whatever ACLs and rules name unauthenticated callers.
  if (change.user == "ANONYMOUS") {
    return error{errc::unacceptable_credential,
                 "user name ANONYMOUS is reserved: it names callers that did not log in (User:ANONYMOUS)"};
  }
  // User:* is how ACLs and quotas name every principal: a user of that name would log in as the
  // wildcard itself, and no listing or deletion by principal could tell the two apart (the
  // breaker of session 32).
  if (change.user == "*") {
    return error{errc::unacceptable_credential, "user name * is reserved: User:* names every principal in ACLs"};
  }
  // The cluster's forwarding secret (users.h): a user of that name would replace or remove it.
  if (change.user == forwarding_secret_user) {
    return error{errc::unacceptable_credential, "user name " + std::string(forwarding_secret_user) +
                                                    " is reserved: it holds the brokers' forwarding secret"};
  }
  if (std::any_of(change.user.begin(), change.user.end(), [](char ch) { return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f; })) {
    return error{errc::unacceptable_credential, "user name must not hold control characters (NUL, CR, LF, ...)"};
  }
  if (!change.credential) return base::ok_v;
  const auto& c = *change.credential;
  if (auto shape = security::check_credential_shape(c.iterations, c.salt); !shape.ok()) {
    return error{errc::unacceptable_credential, "user '" + change.user + "': " + shape.error().message};
  }
  const size_t key_bytes = security::digest_bytes(change.mechanism);
  if (c.mechanism != change.mechanism || c.stored_key.size() != key_bytes || c.server_key.size() != key_bytes) {
    return error{errc::unacceptable_credential, "user '" + change.user + "': keys do not fit " +
                                                    std::string(security::mechanism_name(change.mechanism))};
  }
  return base::ok_v;
}

}  // namespace

std::vector<user_description> security_manager::describe_users(const std::vector<std::string>& users) const {
  const auto held = metadata_.view();
  const auto& all = held->image->scram_credentials();
  auto describe = [](const std::string& name, const auto* by_mechanism) {
    user_description d{name, {}};
    if (by_mechanism == nullptr) return d;
    for (const auto& [type, record] : *by_mechanism) {
      if (auto m = security::scram_mechanism_from_type(type)) d.credentials.push_back({*m, record.iterations});
    }
    return d;
  };
  std::vector<user_description> out;
  if (users.empty()) {
    for (const auto& [name, by_mechanism] : all) {
      if (name != forwarding_secret_user) out.push_back(describe(name, &by_mechanism));
    }
    return out;
  }
  for (const auto& name : users) {
    auto it = name == forwarding_secret_user ? all.end() : all.find(name);   // no user: described as unknown
    out.push_back(describe(name, it == all.end() ? nullptr : &it->second));
  }
  return out;
}

void security_manager::alter_user_scram_credentials(std::vector<scram_credential_alteration> changes,
                                               std::function<void(std::vector<result<void>>)> done) {
  if (stopping_) {
    return done(std::vector<result<void>>(changes.size(), error{errc::broker_not_available, "the broker is shutting down"}));
  }
  runtime_.post(controller_shard, [this, changes = std::move(changes), done = std::move(done)]() mutable {
    std::vector<result<void>> results(changes.size(), base::ok_v);
    // Kafka's rule (KIP-554): a user and mechanism pair named twice is a duplicate; one user's
    // two mechanisms in one request are not (kafka-configs sets both so, and `ringlog users
    // delete NAME` deletes both so: it was refused for a user holding both, session 32).
    std::map<std::pair<std::string, int>, int> seen;
    for (const auto& c : changes) ++seen[{c.user, static_cast<int>(c.mechanism)}];
    const auto& image = metadata_.controller_view()->image->scram_credentials();
    std::vector<protocol::metadata_record> records;
    std::vector<size_t> committed;   // indexes of the changes in `records`
    for (size_t i = 0; i < changes.size(); ++i) {
      const auto& c = changes[i];
      if (seen[{c.user, static_cast<int>(c.mechanism)}] > 1) {
        results[i] = error{errc::duplicate_resource, "user '" + c.user + "' and its mechanism appear more than once in the request"};
        continue;
      }
      if (auto valid = check_alteration(c); !valid.ok()) {
        results[i] = valid.error();
        continue;
      }
      if (!c.credential) {
        auto user = image.find(c.user);
        if (user == image.end() || !user->second.contains(mechanism_type(c.mechanism))) {
          results[i] = error{errc::resource_not_found, "user '" + c.user + "' has no " +
                                                           std::string(security::mechanism_name(c.mechanism)) + " credential"};
          continue;
        }
        protocol::remove_user_scram_credential_record r;
        r.name = c.user;
        r.mechanism = mechanism_type(c.mechanism);
        records.push_back(r);
      } else {
        protocol::user_scram_credential_record r;
        r.name = c.user;
        r.mechanism = mechanism_type(c.mechanism);
        r.salt = c.credential->salt;
        r.stored_key = c.credential->stored_key;
        r.server_key = c.credential->server_key;
        r.iterations = c.credential->iterations;
        r.ringlog_create_only = c.create_only;
        records.push_back(r);
      }
      committed.push_back(i);
    }
    if (records.empty()) return done(std::move(results));
    writer_.commit_records(std::move(records), [results = std::move(results), committed = std::move(committed),
                                        done = std::move(done)](result<void> r) mutable {
      if (!r.ok()) {
        for (size_t i : committed) results[i] = r.error();
      }
      done(std::move(results));
    });
  });
}

security::scram_lookup security_manager::scram_lookup() const {
  return [this](std::string_view user, security::scram_mechanism m) -> std::optional<security::scram_credential> {
    const auto held = metadata_.view();
    const auto& all = held->image->scram_credentials();
    if (user == forwarding_secret_user) return std::nullopt;   // the secret is no user (users.h)
    auto it = all.find(user);
    if (it == all.end()) return std::nullopt;
    auto found = it->second.find(mechanism_type(m));
    if (found == it->second.end()) return std::nullopt;
    const auto& r = found->second;
    return security::scram_credential{m, r.salt, r.stored_key, r.server_key, r.iterations};
  };
}


}  // namespace ringlog::broker::detail
