// Typed errors for bad user input: each carries where it happened so the CLI prints one line.
#pragma once

#include <stdexcept>
#include <string>

namespace kevo {

// Where an error happened: a file and a 1-based line and column (0 when unknown).
struct Location {
  std::string file;
  int line = 0;
  int col = 0;
};

// Bad input from a user (a contract, a plan, a flag, a candidate). what() is the one-line
// message "FILE:LINE:COL: WHERE: WHAT" (parts that are unknown are left out).
class InputError : public std::runtime_error {
 public:
  InputError(Location loc, std::string where, std::string message);

  const Location& location() const { return loc_; }
  const std::string& where() const { return where_; }
  const std::string& message() const { return message_; }

 private:
  Location loc_;
  std::string where_;
  std::string message_;
};

// An error inside the reference program, at a 1-based line and column of its text.
// The contract loader turns it into an InputError naming the file position of the reference.
class ReferenceError : public std::runtime_error {
 public:
  ReferenceError(int line, int col, std::string message);

  int line() const { return line_; }
  int col() const { return col_; }
  const std::string& message() const { return message_; }

 private:
  int line_;
  int col_;
  std::string message_;
};

}  // namespace kevo
