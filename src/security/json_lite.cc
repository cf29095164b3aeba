#include "json_lite.h"

#include <cmath>
#include <cstdlib>
#include <tuple>

namespace ringlog::security::detail {

const json_value* json_value::find(std::string_view key) const {
  if (type != kind::object) return nullptr;
  for (const auto& [name, value] : members) {
    if (name == key) return &value;
  }
  return nullptr;
}

std::optional<std::string_view> json_value::string_at(std::string_view key) const {
  const json_value* v = find(key);
  if (v == nullptr || v->type != kind::string) return std::nullopt;
  return std::string_view(v->text);
}

std::optional<int64_t> json_value::integer_at(std::string_view key) const {
  const json_value* v = find(key);
  // 2^63 is where int64 ends; a NumericDate past it is no date.
  if (v == nullptr || v->type != kind::number || std::floor(v->number) != v->number ||
      std::fabs(v->number) >= 9.2e18) {
    return std::nullopt;
  }
  return static_cast<int64_t>(v->number);
}

namespace {

class reader {
 public:
  explicit reader(std::string_view text) : text_(text) {}

  std::optional<json_value> document(std::string* why);

 private:
  struct frame {
    json_value value;
    std::string key;  // the member name waiting for its value (objects)
  };
  enum class expect { value, key_or_close, value_or_close, comma_or_close, key, done };

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool fail(const char* what) {
    why_ = std::string(what) + " at byte " + std::to_string(pos_);
    return false;
  }
  bool string(std::string& out);
  bool hex4(uint32_t& out);
  bool scalar(json_value& out);
  bool open_or_scalar();
  bool attach(json_value v);
  bool close(char bracket);

  std::string_view text_;
  size_t pos_ = 0;
  std::vector<frame> stack_;
  std::optional<json_value> root_;
  expect expect_ = expect::value;
  std::string why_;
};

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

bool reader::hex4(uint32_t& out) {
  if (pos_ + 4 > text_.size()) return fail("short \\u escape");
  out = 0;
  for (int i = 0; i < 4; ++i) {
    const char c = text_[pos_++];
    out <<= 4;
    if (c >= '0' && c <= '9') out |= static_cast<uint32_t>(c - '0');
    else if (c >= 'a' && c <= 'f') out |= static_cast<uint32_t>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') out |= static_cast<uint32_t>(c - 'A' + 10);
    else return fail("bad hex digit in \\u escape");
  }
  return true;
}

bool reader::string(std::string& out) {
  ++pos_;  // the opening quote
  while (pos_ < text_.size()) {
    const char c = text_[pos_++];
    if (c == '"') return true;
    if (static_cast<unsigned char>(c) < 0x20) return fail("control character in a string");
    if (c != '\\') {
      out += c;
      continue;
    }
    if (pos_ >= text_.size()) break;
    const char e = text_[pos_++];
    switch (e) {
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case '/': out += '/'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        uint32_t cp = 0;
        if (!hex4(cp)) return false;
        if (cp >= 0xD800 && cp <= 0xDBFF) {  // a high surrogate: its low half must follow
          uint32_t low = 0;
          if (text_.substr(pos_, 2) != "\\u") return fail("lone high surrogate");
          pos_ += 2;
          if (!hex4(low)) return false;
          if (low < 0xDC00 || low > 0xDFFF) return fail("bad low surrogate");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          return fail("lone low surrogate");
        }
        append_utf8(out, cp);
        break;
      }
      default: return fail("unknown escape");
    }
  }
  return fail("unterminated string");
}

bool reader::scalar(json_value& out) {
  const char c = text_[pos_];
  if (c == '"') {
    out.type = json_value::kind::string;
    return string(out.text);
  }
  for (const auto& [word, type, flag] :
       {std::tuple{std::string_view("true"), json_value::kind::boolean, true},
        std::tuple{std::string_view("false"), json_value::kind::boolean, false},
        std::tuple{std::string_view("null"), json_value::kind::null, false}}) {
    if (text_.substr(pos_, word.size()) == word) {
      pos_ += word.size();
      out.type = type;
      out.boolean = flag;
      return true;
    }
  }
  // RFC 8259 number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  const size_t start = pos_;
  auto digits = [&] {
    const size_t from = pos_;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
    return pos_ > from;
  };
  if (pos_ < text_.size() && text_[pos_] == '-') ++pos_;
  if (pos_ < text_.size() && text_[pos_] == '0') {
    ++pos_;
  } else if (!digits()) {
    return fail("unexpected character");
  }
  if (pos_ < text_.size() && text_[pos_] == '.') {
    ++pos_;
    if (!digits()) return fail("digits expected after '.'");
  }
  if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
    ++pos_;
    if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
    if (!digits()) return fail("digits expected in the exponent");
  }
  out.type = json_value::kind::number;
  out.number = std::strtod(std::string(text_.substr(start, pos_ - start)).c_str(), nullptr);
  return true;
}

bool reader::attach(json_value v) {
  if (stack_.empty()) {
    root_ = std::move(v);
    expect_ = expect::done;
    return true;
  }
  frame& top = stack_.back();
  if (top.value.type == json_value::kind::array) {
    top.value.items.push_back(std::move(v));
  } else {
    // RFC 7515 section 4: duplicate names are rejected, so no two readers see different claims.
    if (top.value.find(top.key) != nullptr) return fail("duplicate member name");
    top.value.members.emplace_back(std::move(top.key), std::move(v));
    top.key.clear();
  }
  expect_ = expect::comma_or_close;
  return true;
}

bool reader::close(char bracket) {
  const bool object = stack_.back().value.type == json_value::kind::object;
  if (bracket != (object ? '}' : ']')) return fail("mismatched bracket");
  ++pos_;
  json_value done = std::move(stack_.back().value);
  stack_.pop_back();
  return attach(std::move(done));
}

bool reader::open_or_scalar() {
  const char c = text_[pos_];
  if (c == '{' || c == '[') {
    if (stack_.size() >= json_depth_max) return fail("nesting deeper than 16");
    ++pos_;
    frame f;
    f.value.type = c == '{' ? json_value::kind::object : json_value::kind::array;
    stack_.push_back(std::move(f));
    expect_ = c == '{' ? expect::key_or_close : expect::value_or_close;
    return true;
  }
  json_value v;
  return scalar(v) && attach(std::move(v));
}

std::optional<json_value> reader::document(std::string* why) {
  bool ok = true;
  while (ok && expect_ != expect::done) {
    skip_space();
    if (pos_ >= text_.size()) {
      ok = fail("unexpected end of document");
      break;
    }
    const char c = text_[pos_];
    switch (expect_) {
      case expect::value: ok = open_or_scalar(); break;
      case expect::value_or_close: ok = c == ']' ? close(c) : open_or_scalar(); break;
      case expect::key_or_close:
      case expect::key:
        if (c == '}' && expect_ == expect::key_or_close) {
          ok = close(c);
          break;
        }
        if (c != '"') {
          ok = fail("member name expected");
          break;
        }
        ok = string(stack_.back().key);
        skip_space();
        if (ok && (pos_ >= text_.size() || text_[pos_] != ':')) ok = fail("':' expected");
        ++pos_;
        expect_ = expect::value;
        break;
      case expect::comma_or_close:
        if (c == ',') {
          ++pos_;
          expect_ = stack_.back().value.type == json_value::kind::object ? expect::key
                                                                         : expect::value;
        } else {
          ok = close(c);
        }
        break;
      case expect::done: break;
    }
  }
  skip_space();
  if (ok && pos_ != text_.size()) ok = fail("bytes after the document");
  if (!ok) {
    if (why != nullptr) *why = why_;
    return std::nullopt;
  }
  return std::move(root_);
}

}  // namespace

std::optional<json_value> parse_json(std::string_view text, std::string* why) {
  return reader(text).document(why);
}

}  // namespace ringlog::security::detail
