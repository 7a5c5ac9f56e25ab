// The generic family's view of a task: every graph value as an input buffer, a map (an
// elementwise op or a view, computed at an index by inline code) or a reduction (an output
// element as the reduction of K terms) or a scan, with sizes as plan expressions. Composite ops
// (softmax, norms, losses, attention) become several such values.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lower/kit.h"

namespace kevo::lower::generic {

class Code;

// What a value is made of. Map code reads other values through Code::read; reduction code too.
enum class Kind { Input, Map, Reduce, Scan };

struct Value {
  std::string what;                   // for comments: "%3 softmax (row max)"
  Kind kind = Kind::Map;
  DType dtype = DType::Float32;
  std::vector<std::string> dims;      // plan expressions ("B", "(H - 2)", "16")
  std::vector<std::vector<int64_t>> sizes;  // per workload
  int input = -1;                     // Input: the contract input's index
  std::vector<int> operands;          // the values its code reads
  // Map: an elementwise value reads its operands at its own index (broadcast): an elementwise
  // tail of a reduction may be fused into the reduction's store.
  bool elementwise = false;
  // Map: the value at index array `i` (statements into c, returns an expression).
  std::function<std::string(Code& c, const std::string& i)> map;
  // Reduce: "GSum", "GProd", "GMax", "GMin", "GArgMax", "GArgMin"; the reduction extents; the
  // term at output index o and reduction index k (arrays); the finished value from `acc` (float)
  // and `arg` (the flat reduction index of an arg reduction's pick).
  std::string op;
  std::vector<std::string> extents;
  std::function<std::string(Code& c, const std::string& o, const std::string& k)> term;
  std::function<std::string(Code& c, const std::string& o, const std::string& acc, const std::string& arg)> finish;
  bool contraction = false;           // matmul- or convolution-like (its own lanes knob)
  // Scan: "GSum" or "GProd" along dim `scan_dim`; term reads the element at index `o`.
  int scan_dim = -1;

  int rank() const { return static_cast<int>(dims.size()); }
  int64_t numel(size_t w) const;
};

struct Program {
  std::vector<Value> values;
  std::vector<int> outputs;  // value per contract output
};

// Builds the program of a task; throws std::runtime_error naming what it cannot lower.
Program build_program(const TaskGraph& tg);

// C++ code generation inside one generated function: statements, fresh names, and how values
// are read (an accessor call, or inline code for an epilogue's chain).
class Code {
 public:
  using Reader = std::function<std::string(Code&, int v, const std::string& idx)>;
  Code(const Program& prog, Reader read, std::function<std::string(const std::string&)> size)
      : prog_(prog), read_(std::move(read)), size_(std::move(size)) {}
  const Program& program() const { return prog_; }
  const Value& value(int v) const { return prog_.values[static_cast<size_t>(v)]; }
  std::string fresh(const std::string& stem);
  void line(const std::string& s) { out_ += "    " + s + "\n"; }
  const std::string& text() const { return out_; }
  // Reads value v at index array idx (of v's rank).
  std::string read(int v, const std::string& idx) { return read_(*this, v, idx); }
  // A size expression as device code ("p.s0", "128").
  std::string size(const std::string& expr) const { return size_(expr); }
  std::string dim(int v, int d) const { return size(value(v).dims[static_cast<size_t>(d)]); }
  // Declares an index array of the given entries; returns its name.
  std::string index(const std::vector<std::string>& entries);
  // The index of operand u read at index i of a value of rank r (right-aligned broadcasting:
  // dims where u has size 1 read 0).
  std::string broadcast(int u, const std::string& i, int r);
  // The flat offset of index i in value v (row-major).
  std::string flat(int v, const std::string& i) const;
  // Declares the index array of v's shape for a flat offset f.
  std::string unflat(int v, const std::string& f);
  std::string unflat_dims(const std::vector<std::string>& dims, const std::string& f);

 private:
  const Program& prog_;
  Reader read_;
  std::function<std::string(const std::string&)> size_;
  std::string out_;
  int next_ = 0;
};

}  // namespace kevo::lower::generic
