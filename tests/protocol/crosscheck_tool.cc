// Decodes Kafka message bodies written by another implementation and writes them back, for
// tests/python/kafka_protocol_crosscheck.py (kafka-python interop).
//
// stdin, one per line:  request|response API_KEY VERSION HEX
// stdout, one per line: ok HEX (our re-encoding of what we decoded) | error MESSAGE
// A body must be consumed exactly; leftover bytes are an error.
#include <cstdint>
#include <iostream>
#include <sstream>
#include <string>

#include "ringlog/protocol/messages.h"
#include "ringlog/protocol/samples.h"

using namespace ringlog::protocol;

namespace {

bytes from_hex(const std::string& hex) {
  bytes out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<std::byte>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

std::string to_hex(const bytes& b) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (std::byte x : b) {
    out.push_back(digits[static_cast<uint8_t>(x) >> 4]);
    out.push_back(digits[static_cast<uint8_t>(x) & 0xf]);
  }
  return out;
}

struct dispatch {
  std::string kind;
  int16_t key;
  int16_t version;
  const bytes* body;
  std::string* out;
  bool found = false;

  template <typename T>
  void operator()() {
    if constexpr (requires { T::api_key; }) {
      const std::string_view name = T::schema_name;
      const bool is_request = name.ends_with("Request");
      const bool is_response = name.ends_with("Response");
      if (found || T::api_key != key || (kind == "request" ? !is_request : !is_response)) {
        return;
      }
      found = true;
      reader rd(*body);
      auto d = T::decode(rd, version);
      if (!d.ok()) {
        *out = "error " + d.error().message;
        return;
      }
      if (rd.remaining() != 0) {
        *out = "error " + std::to_string(rd.remaining()) + " bytes left after " + std::string(name);
        return;
      }
      writer w;
      auto e = d->encode(w, version);
      *out = e.ok() ? "ok " + to_hex(w.buffer()) : "error re-encode: " + e.error().message;
    }
  }
};

}  // namespace

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string kind;
    int key = 0;
    int version = 0;
    std::string hex;
    in >> kind >> key >> version >> hex;
    const bytes body = from_hex(hex);
    std::string out = "error unknown api key";
    dispatch d{kind, static_cast<int16_t>(key), static_cast<int16_t>(version), &body, &out};
    testing::for_each_message(d);
    std::cout << out << "\n";
  }
  return 0;
}
