#pragma once
// Typed fields of simdjson DOM request bodies, shared by the gateway's parsers (request_parsing.cc
// for produce and admin bodies, consumer_parsing.cc for consumer and group bodies): every refusal
// is an api_error whose message names the field and the JSON type it must have.

#include <simdjson.h>

#include <algorithm>
#include <array>
#include <initializer_list>
#include <string>
#include <string_view>

#include "errors.h"
#include "http_util.h"
#include "request_parsing.h"
#include "ringlog/base/assert.h"

namespace ringlog::gateway::json_dom {

namespace dom = simdjson::dom;
namespace ec = error_codes;


/// The produce parsers' dom::parser, one per thread and reused: a fresh parser allocates
/// buffers of several times the document (mmap'd for a 100 KiB produce body) on every request.
/// After a document larger than parser_reuse_bytes_max its buffers are given back, so one huge
/// request does not pin its memory in every shard thread.
constexpr size_t parser_reuse_bytes_max = size_t{4} << 20;

class parser_lease {
 public:
  parser_lease() : parser_(thread_parser()) {}
  ~parser_lease() {
    if (parser_.capacity() > parser_reuse_bytes_max) parser_ = dom::parser{};
  }
  parser_lease(const parser_lease&) = delete;
  parser_lease& operator=(const parser_lease&) = delete;
  dom::parser& operator*() { return parser_; }
  dom::parser* operator->() { return &parser_; }

 private:
  static dom::parser& thread_parser() {
    thread_local dom::parser parser;
    return parser;
  }
  dom::parser& parser_;
};

inline api_error unprocessable(std::string message) { return {422, ec::unprocessable, std::move(message)}; }

/// A required field missing from a well-formed object: the body is not the request the route
/// reads (Confluent answers 400/400 when its request model cannot be built from the JSON).
inline api_error missing_field(std::string_view field) {
  return {400, ec::invalid_request, std::string(field) + " is required"};
}

/// The refusal of a body simdjson could not parse; `body` is the text it read, so that an
/// out-of-range number is named (json_number_out_of_range_message).
inline api_error malformed(simdjson::error_code code, std::string_view body) {
  if (code == simdjson::NUMBER_ERROR) {
    return {422, ec::unprocessable, json_number_out_of_range_message(body, "request body")};
  }
  return {400, ec::bad_request, std::string("malformed JSON request body: ") + simdjson::error_message(code)};
}

inline std::string_view type_name(dom::element_type t) {
  switch (t) {
    case dom::element_type::ARRAY: return "an array";
    case dom::element_type::OBJECT: return "an object";
    case dom::element_type::INT64:
    case dom::element_type::UINT64: return "an integer";
    case dom::element_type::DOUBLE: return "a number";
    case dom::element_type::STRING: return "a string";
    case dom::element_type::BOOL: return "a boolean";
    case dom::element_type::NULL_VALUE: return "null";
  }
  return "a value";
}

inline api_error wrong_type(std::string_view field, std::string_view expected, dom::element e) {
  // The top level has no field name: call it what it is.
  const std::string name = field.empty() ? std::string("request body") : std::string(field);
  return unprocessable(name + " must be " + std::string(expected) + ", got " +
                       std::string(type_name(e.type())));
}

/// An integer field in [min, max]; names the field and the bounds when it is not.
inline parsed<int64_t> integer_field(std::string_view field, dom::element e, int64_t min, int64_t max) {
  int64_t v = 0;
  if (e.type() == dom::element_type::INT64) {
    v = e.get_int64().value_unsafe();
  } else if (e.type() == dom::element_type::UINT64) {
    return unprocessable(std::string(field) + " is out of range [" + std::to_string(min) + ", " +
                         std::to_string(max) + "]");
  } else {
    return wrong_type(field, "an integer", e);
  }
  if (v < min || v > max) {
    return unprocessable(std::string(field) + " is out of range [" + std::to_string(min) + ", " +
                         std::to_string(max) + "]: " + std::to_string(v));
  }
  return v;
}

inline parsed<bool> bool_field(std::string_view field, dom::element e) {
  if (e.type() != dom::element_type::BOOL) return wrong_type(field, "a boolean", e);
  return e.get_bool().value_unsafe();
}

inline parsed<std::string_view> string_field(std::string_view field, dom::element e) {
  if (e.type() != dom::element_type::STRING) return wrong_type(field, "a string", e);
  return e.get_string().value_unsafe();
}

/// The names of an object's fields seen so far, in a fixed array (no allocation: objects here
/// have a handful of fields and this runs once per record).
class field_names {
 public:
  static constexpr size_t capacity = 16;
  [[nodiscard]] bool contains(std::string_view name) const {
    return std::find(names_.begin(), names_.begin() + static_cast<ptrdiff_t>(count_), name) !=
           names_.begin() + static_cast<ptrdiff_t>(count_);
  }
  [[nodiscard]] bool full() const { return count_ == capacity; }
  void add(std::string_view name) {
    RINGLOG_ASSERT_OP(count_, <, capacity);
    names_[count_++] = name;
  }

 private:
  std::array<std::string_view, capacity> names_;
  size_t count_ = 0;
};

/// Refuses fields outside `allowed`: a misspelt "vlaue" must not silently produce a null value.
inline parsed<dom::object> object_with(std::string_view field, dom::element e, std::initializer_list<std::string_view> allowed) {
  if (e.type() != dom::element_type::OBJECT) return wrong_type(field, "an object", e);
  dom::object o = e.get_object().value_unsafe();
  // Runs once per record of a produce request: no allocation unless the object is refused.
  // Every key is one of `allowed` (a handful), so a key seen more times than `allowed` holds
  // names is a duplicate and `seen` never holds more than `allowed`.
  RINGLOG_ASSERT_OP(allowed.size(), <=, field_names::capacity);
  field_names seen;
  auto where = [field] { return field.empty() ? std::string("request body") : std::string(field); };
  for (auto [key, value] : o) {
    bool known = false;
    for (auto a : allowed) known = known || a == key;
    if (!known) {
      // Name the expected shape: a body written from memory ("partitions" for "data") is fixed
      // from the answer, without the OpenAPI document at hand.
      std::string takes;
      for (auto a : allowed) takes += (takes.empty() ? "" : ", ") + std::string(a);
      return unprocessable(where() + " has an unknown field \"" + std::string(key) + "\"; it takes " + takes);
    }
    // RFC 8259 leaves duplicate names to the parser; silently keeping one would hide a bug.
    if (seen.contains(key)) return unprocessable(where() + " has the field \"" + std::string(key) + "\" twice");
    seen.add(key);
  }
  return o;
}

inline std::string path_of(std::string_view parent, std::string_view child) {
  return parent.empty() ? std::string(child) : std::string(parent) + "." + std::string(child);
}

}  // namespace ringlog::gateway::json_dom
