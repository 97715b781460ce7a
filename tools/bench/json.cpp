#include "json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace bench::json {

Value Value::make_bool(bool b) {
  Value v;
  v.type_ = Type::kBool;
  v.bool_ = b;
  return v;
}

Value Value::make_number(double d) {
  Value v;
  v.type_ = Type::kNumber;
  v.number_ = d;
  return v;
}

Value Value::make_string(std::string s) {
  Value v;
  v.type_ = Type::kString;
  v.string_ = std::move(s);
  return v;
}

Value Value::make_array() {
  Value v;
  v.type_ = Type::kArray;
  return v;
}

Value Value::make_object() {
  Value v;
  v.type_ = Type::kObject;
  return v;
}

const Value* Value::find(std::string_view key) const {
  if (type_ != Type::kObject) return nullptr;
  for (const auto& [k, v] : object_) {
    if (k == key) return &v;
  }
  return nullptr;
}

namespace {

// Hand-edited suites are the main input, so errors point at a line and column.
class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  bool run(Value& out, std::string& error) {
    skip_space();
    if (!parse_value(out, 0)) {
      error = error_;
      return false;
    }
    skip_space();
    if (pos_ != text_.size()) {
      fail("unexpected text after the document");
      error = error_;
      return false;
    }
    return true;
  }

 private:
  // Deep nesting only comes from corrupt or hostile input; a bound keeps the
  // recursion from overflowing the stack.
  static constexpr int kMaxDepth = 128;

  bool fail(const char* what) {
    if (!error_.empty()) return false;  // keep the first, most precise message
    int line = 1, col = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    char buf[256];
    std::snprintf(buf, sizeof(buf), "line %d, column %d: %s", line, col, what);
    error_ = buf;
    return false;
  }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }

  void skip_space() {
    while (!at_end()) {
      char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else {
        break;
      }
    }
  }

  bool expect_word(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return fail("invalid literal");
    pos_ += word.size();
    return true;
  }

  bool parse_value(Value& out, int depth) {
    if (depth > kMaxDepth) return fail("nesting too deep");
    if (at_end()) return fail("unexpected end of input");
    char c = peek();
    switch (c) {
      case '{':
        return parse_object(out, depth);
      case '[':
        return parse_array(out, depth);
      case '"': {
        std::string s;
        if (!parse_string(s)) return false;
        out = Value::make_string(std::move(s));
        return true;
      }
      case 't':
        if (!expect_word("true")) return false;
        out = Value::make_bool(true);
        return true;
      case 'f':
        if (!expect_word("false")) return false;
        out = Value::make_bool(false);
        return true;
      case 'n':
        if (!expect_word("null")) return false;
        out = Value();
        return true;
      default:
        if (c == '-' || (c >= '0' && c <= '9')) return parse_number(out);
        return fail("unexpected character");
    }
  }

  bool parse_object(Value& out, int depth) {
    ++pos_;  // '{'
    out = Value::make_object();
    skip_space();
    if (peek() == '}') {
      ++pos_;
      return true;
    }
    for (;;) {
      skip_space();
      if (peek() != '"') return fail("expected a string key");
      std::string key;
      if (!parse_string(key)) return false;
      skip_space();
      if (peek() != ':') return fail("expected ':'");
      ++pos_;
      skip_space();
      Value v;
      if (!parse_value(v, depth + 1)) return false;
      out.members().emplace_back(std::move(key), std::move(v));
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == '}') {
        ++pos_;
        return true;
      }
      return fail("expected ',' or '}'");
    }
  }

  bool parse_array(Value& out, int depth) {
    ++pos_;  // '['
    out = Value::make_array();
    skip_space();
    if (peek() == ']') {
      ++pos_;
      return true;
    }
    for (;;) {
      skip_space();
      Value v;
      if (!parse_value(v, depth + 1)) return false;
      out.items().push_back(std::move(v));
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == ']') {
        ++pos_;
        return true;
      }
      return fail("expected ',' or ']'");
    }
  }

  bool parse_hex4(uint32_t& cp) {
    if (pos_ + 4 > text_.size()) return fail("truncated \\u escape");
    cp = 0;
    for (int i = 0; i < 4; ++i) {
      char h = text_[pos_++];
      cp <<= 4;
      if (h >= '0' && h <= '9') {
        cp |= static_cast<uint32_t>(h - '0');
      } else if (h >= 'a' && h <= 'f') {
        cp |= static_cast<uint32_t>(h - 'a' + 10);
      } else if (h >= 'A' && h <= 'F') {
        cp |= static_cast<uint32_t>(h - 'A' + 10);
      } else {
        return fail("bad hex digit in \\u escape");
      }
    }
    return true;
  }

  static void append_utf8(std::string& s, uint32_t cp) {
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else if (cp < 0x800) {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      s += static_cast<char>(0xE0 | (cp >> 12));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      s += static_cast<char>(0xF0 | (cp >> 18));
      s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  bool parse_string(std::string& out) {
    ++pos_;  // opening quote
    for (;;) {
      if (at_end()) return fail("unterminated string");
      char c = text_[pos_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return fail("control character in string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_end()) return fail("unterminated escape");
      char e = text_[pos_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          uint32_t cp = 0;
          if (!parse_hex4(cp)) return false;
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            // A high surrogate must be followed by its low half to name one code point.
            if (text_.substr(pos_, 2) != "\\u") return fail("unpaired surrogate");
            pos_ += 2;
            uint32_t lo = 0;
            if (!parse_hex4(lo)) return false;
            if (lo < 0xDC00 || lo > 0xDFFF) return fail("bad low surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return fail("unpaired surrogate");
          }
          append_utf8(out, cp);
          break;
        }
        default:
          return fail("unknown escape");
      }
    }
  }

  bool parse_number(Value& out) {
    size_t start = pos_;
    // Check the JSON number grammar first; strtod alone would accept hex, inf, etc.
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
    } else if (peek() >= '1' && peek() <= '9') {
      while (peek() >= '0' && peek() <= '9') ++pos_;
    } else {
      return fail("bad number");
    }
    if (peek() == '.') {
      ++pos_;
      if (!(peek() >= '0' && peek() <= '9')) return fail("bad number: digits expected after '.'");
      while (peek() >= '0' && peek() <= '9') ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!(peek() >= '0' && peek() <= '9')) return fail("bad number: exponent digits expected");
      while (peek() >= '0' && peek() <= '9') ++pos_;
    }
    std::string token(text_.substr(start, pos_ - start));
    out = Value::make_number(std::strtod(token.c_str(), nullptr));
    return true;
  }

  std::string_view text_;
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace

bool parse(std::string_view text, Value& out, std::string& error) {
  Parser p(text);
  return p.run(out, error);
}

bool parse_file(const std::string& path, Value& out, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot open " + path;
    return false;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string err;
  if (!parse(ss.str(), out, err)) {
    error = path + ": " + err;
    return false;
  }
  return true;
}

std::string escape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out;
}

void Writer::newline() {
  out_ += '\n';
  out_.append(stack_.size() * 2, ' ');
}

void Writer::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!stack_.empty()) {
    if (!stack_.back().empty) out_ += ',';
    stack_.back().empty = false;
    newline();
  }
}

void Writer::begin_object() {
  before_value();
  out_ += '{';
  stack_.push_back({true, true});
}

void Writer::end_object() {
  bool was_empty = stack_.back().empty;
  stack_.pop_back();
  if (!was_empty) newline();
  out_ += '}';
  if (stack_.empty()) out_ += '\n';
}

void Writer::begin_array() {
  before_value();
  out_ += '[';
  stack_.push_back({false, true});
}

void Writer::end_array() {
  bool was_empty = stack_.back().empty;
  stack_.pop_back();
  if (!was_empty) newline();
  out_ += ']';
  if (stack_.empty()) out_ += '\n';
}

void Writer::key(std::string_view k) {
  if (!stack_.back().empty) out_ += ',';
  stack_.back().empty = false;
  newline();
  out_ += '"';
  out_ += escape(k);
  out_ += "\": ";
  after_key_ = true;
}

void Writer::value(std::string_view s) {
  before_value();
  out_ += '"';
  out_ += escape(s);
  out_ += '"';
}

void Writer::value(const char* s) {
  if (s == nullptr) {
    null();
  } else {
    value(std::string_view(s));
  }
}

static std::string format_double(double d) {
  char buf[64];
  // 10 significant digits keep microsecond timings exact to well under a nanosecond.
  std::snprintf(buf, sizeof(buf), "%.10g", d);
  return buf;
}

void Writer::value(double d) {
  if (!std::isfinite(d)) {
    null();
    return;
  }
  before_value();
  out_ += format_double(d);
}

void Writer::value(int64_t i) {
  before_value();
  out_ += std::to_string(i);
}

void Writer::value(bool b) {
  before_value();
  out_ += b ? "true" : "false";
}

void Writer::null() {
  before_value();
  out_ += "null";
}

void Writer::number_array(const std::vector<double>& values) {
  before_value();
  out_ += '[';
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out_ += ", ";
    out_ += std::isfinite(values[i]) ? format_double(values[i]) : std::string("null");
  }
  out_ += ']';
}

}  // namespace bench::json
