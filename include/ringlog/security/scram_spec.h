#pragma once
// Kafka's `--add-scram` text (kafka-storage format, KIP-900), which `ringlog serve --add-scram`
// takes as is:
//   MECHANISM=[name=NAME,password=PASSWORD]
//   MECHANISM=[name=NAME,password=PASSWORD,iterations=N]
//   MECHANISM=[name=NAME,salt=BASE64,password=PASSWORD,iterations=N]
//   MECHANISM=[name=NAME,salt=BASE64,saltedpassword=BASE64,iterations=N]
// MECHANISM is SCRAM-SHA-256 or SCRAM-SHA-512; values may be in double quotes (a quoted value may
// hold ',' and ']'); salt and saltedpassword are standard base64 (Kafka's). Without a salt one
// is drawn at random; without iterations, 4096.

#include <string>
#include <string_view>

#include "ringlog/security/scram.h"

namespace ringlog::security {

struct scram_user_spec {
  std::string user;
  scram_credential credential;
};

/// Parses one --add-scram value and derives its credential. Errors: invalid_config naming the
/// flag and what is wrong (an unknown mechanism or key, a missing name or password, iterations
/// out of 4096..16384, bad base64, both password and saltedpassword).
result<scram_user_spec> parse_add_scram(std::string_view text);

}  // namespace ringlog::security
