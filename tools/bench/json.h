// A deliberately small JSON reader and writer for anvil-bench. The GPU machines have no
// third-party C++ libraries, and the bench only needs to read shape suites and anchor
// files and write its own results, so this covers the JSON grammar and nothing more.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bench::json {

class Value {
 public:
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };

  Value() = default;
  static Value make_bool(bool b);
  static Value make_number(double d);
  static Value make_string(std::string s);
  static Value make_array();
  static Value make_object();

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::kNull; }
  bool is_bool() const { return type_ == Type::kBool; }
  bool is_number() const { return type_ == Type::kNumber; }
  bool is_string() const { return type_ == Type::kString; }
  bool is_array() const { return type_ == Type::kArray; }
  bool is_object() const { return type_ == Type::kObject; }

  bool as_bool() const { return bool_; }
  double as_number() const { return number_; }
  const std::string& as_string() const { return string_; }
  const std::vector<Value>& items() const { return array_; }
  std::vector<Value>& items() { return array_; }
  // Keys keep file order: suites are run in the order they are written.
  const std::vector<std::pair<std::string, Value>>& members() const { return object_; }
  std::vector<std::pair<std::string, Value>>& members() { return object_; }

  // nullptr when this is not an object or has no such key.
  const Value* find(std::string_view key) const;

 private:
  Type type_ = Type::kNull;
  bool bool_ = false;
  double number_ = 0;
  std::string string_;
  std::vector<Value> array_;
  std::vector<std::pair<std::string, Value>> object_;
};

// Parses a whole document. On failure returns false and sets error to a message that
// names the line and column.
bool parse(std::string_view text, Value& out, std::string& error);
bool parse_file(const std::string& path, Value& out, std::string& error);

// Streaming writer: emits pretty-printed JSON into a string, inserting commas and
// indentation itself so that callers cannot produce malformed output.
class Writer {
 public:
  void begin_object();
  void end_object();
  void begin_array();
  void end_array();
  void key(std::string_view k);
  void value(std::string_view s);
  void value(const char* s);  // nullptr writes null
  void value(const std::string& s) { value(std::string_view(s)); }
  void value(double d);  // non-finite values write null: JSON has no NaN
  void value(int64_t i);
  void value(int i) { value(static_cast<int64_t>(i)); }
  void value(bool b);
  void null();
  // Arrays of plain numbers stay on one line so the output remains readable.
  void number_array(const std::vector<double>& values);

  const std::string& str() const { return out_; }

 private:
  void before_value();
  void newline();
  struct Level {
    bool is_object;
    bool empty;
  };
  std::vector<Level> stack_;
  bool after_key_ = false;
  std::string out_;
};

std::string escape(std::string_view s);

}  // namespace bench::json
