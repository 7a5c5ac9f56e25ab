// The templates of store/table_io.h: how each kind of field is appended and read back.
#pragma once

#include <algorithm>
#include <cstring>
#include <utility>

namespace kevo::store::h5 {

namespace detail {

template <class M>
struct member_type;
template <class R, class T>
struct member_type<T R::*> {
  using type = T;
};

template <class T>
struct Num;
template <>
struct Num<int32_t> {
  static hid_t file() { return H5T_STD_I32LE; }
  static hid_t mem() { return H5T_NATIVE_INT32; }
};
template <>
struct Num<int64_t> {
  static hid_t file() { return H5T_STD_I64LE; }
  static hid_t mem() { return H5T_NATIVE_INT64; }
};
template <>
struct Num<uint64_t> {
  static hid_t file() { return H5T_STD_U64LE; }
  static hid_t mem() { return H5T_NATIVE_UINT64; }
};
template <>
struct Num<double> {
  static hid_t file() { return H5T_IEEE_F64LE; }
  static hid_t mem() { return H5T_NATIVE_DOUBLE; }
};
template <>
struct Num<char> {  // the bytes of a pooled text
  static hid_t file() { return H5T_STD_U8LE; }
  static hid_t mem() { return H5T_NATIVE_UINT8; }
};

template <class T>
uint64_t as_word(T v) {
  if constexpr (std::is_same_v<T, double>) {
    uint64_t w;
    std::memcpy(&w, &v, 8);
    return w;
  } else {
    return static_cast<uint64_t>(v);
  }
}

// One pooled row's contribution to its data's checksum.
inline void add_row(Checksum& sum, const char* p, size_t n) { sum.add_bytes(p, n); }
inline void add_row(Checksum& sum, const int64_t* p, size_t n) {
  sum.add(n);
  for (size_t i = 0; i < n; ++i) sum.add(static_cast<uint64_t>(p[i]));
}

template <class Row>
std::pair<const char*, size_t> pooled_row(const Row& r, schema::Pooled<Row> f) {
  return {(r.*f.member).data(), (r.*f.member).size()};
}
template <class Row>
std::pair<const int64_t*, size_t> pooled_row(const Row& r, std::vector<int64_t> Row::*m) {
  return {(r.*m).data(), (r.*m).size()};
}
template <class Row>
void set_pooled_row(Row& r, schema::Pooled<Row> f, const char* p, size_t n) {
  (r.*f.member).assign(p, n);
}
template <class Row>
void set_pooled_row(Row& r, std::vector<int64_t> Row::*m, const int64_t* p, size_t n) {
  (r.*m).assign(p, p + n);
}

template <class Row, class F>
using PoolElem = std::remove_const_t<std::remove_pointer_t<decltype(pooled_row(std::declval<const Row&>(), std::declval<F>()).first)>>;

template <class Row, class F>
constexpr bool is_pooled = std::is_same_v<F, schema::Pooled<Row>> || std::is_same_v<F, std::vector<int64_t> Row::*>;

inline std::string path_of(const char* table, const std::string& part) { return std::string("/") + table + "/" + part; }

// Appends `values` to dataset d, continuing its checksum with `sum` (started from d.sum).
template <class T>
void append_values(DatasetFile& d, const std::vector<T>& values, const Checksum& sum) {
  write_at(d, Num<T>::mem(), d.length, values.size(), values.data());
  d.length += values.size();
  d.sum = sum.value();
  set_checksum_attribute(d.ds.get(), d.where, d.sum);
}

// ---- appending one field ----

template <class Row, class T>
void append_field(TableFile&, DatasetFile& d, const std::vector<Row>& rows, T Row::*m) {
  std::vector<T> v(rows.size());
  Checksum sum(d.sum);
  for (size_t i = 0; i < rows.size(); ++i) {
    v[i] = rows[i].*m;
    sum.add(as_word(v[i]));
  }
  append_values(d, v, sum);
}

template <class Row>
void append_field(TableFile& t, DatasetFile& d, const std::vector<Row>& rows, schema::Text<Row> f) {
  size_t longest = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string& s = rows[i].*f.member;
    if (s.find('\0') != std::string::npos)
      throw Failure(d.where + " row " + std::to_string(d.length + i) + " contains a NUL byte (text columns hold UTF-8 text)");
    longest = std::max(longest, s.size());
  }
  if (longest > d.width) widen_text(t, d, longest);
  Checksum sum(d.sum);
  std::string buf(rows.size() * d.width, '\0');
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string& s = rows[i].*f.member;
    s.copy(&buf[i * d.width], d.width);
    sum.add_bytes(s.data(), s.size());
  }
  Id type = text_type(d.width);
  write_at(d, type.get(), d.length, rows.size(), buf.data());
  d.length += rows.size();
  d.sum = sum.value();
  set_checksum_attribute(d.ds.get(), d.where, d.sum);
}

template <class Row, class F>
void append_pooled(DatasetFile* d, const std::vector<Row>& rows, F f) {
  using Elem = PoolElem<Row, F>;
  std::vector<int64_t> offset(rows.size()), length(rows.size());
  std::vector<Elem> data;
  Checksum offset_sum(d[0].sum), length_sum(d[1].sum), data_sum(d[2].sum);
  for (size_t i = 0; i < rows.size(); ++i) {
    auto [p, count] = pooled_row(rows[i], f);
    offset[i] = static_cast<int64_t>(d[2].length + data.size());
    length[i] = static_cast<int64_t>(count);
    data.insert(data.end(), p, p + count);
    offset_sum.add(as_word(offset[i]));
    length_sum.add(as_word(length[i]));
    add_row(data_sum, p, count);
  }
  append_values(d[0], offset, offset_sum);
  append_values(d[1], length, length_sum);
  append_values(d[2], data, data_sum);
}

// ---- reading one field ----

template <class T>
std::vector<T> read_checked(hid_t ds, const std::string& where, hsize_t n) {
  std::vector<T> v(n);
  read_range(ds, where, Num<T>::mem(), 0, n, v.data());
  Checksum sum;
  for (const T& x : v) sum.add(as_word(x));
  verify_checksum(ds, where, sum.value());
  return v;
}

// An opened dataset of a table being read.
struct OpenPart {
  Id ds;
  std::string where;
  hsize_t n = 0;
  size_t width = 0;
};

template <class Row, class T>
void read_field(OpenPart* p, std::vector<Row>& rows, T Row::*m) {
  std::vector<T> v = read_checked<T>(p[0].ds.get(), p[0].where, p[0].n);
  for (size_t i = 0; i < rows.size(); ++i) rows[i].*m = v[i];
}

template <class Row>
void read_field(OpenPart* p, std::vector<Row>& rows, schema::Text<Row> f) {
  Id type(ok(H5Dget_type(p[0].ds.get()), "cannot read " + p[0].where), H5Tclose);  // its width and charset
  const size_t width = p[0].width;
  std::string buf(rows.size() * width, '\0');
  read_range(p[0].ds.get(), p[0].where, type.get(), 0, rows.size(), buf.data());
  Checksum sum;
  for (size_t i = 0; i < rows.size(); ++i) {
    const char* s = buf.data() + i * width;
    std::string& out = rows[i].*f.member;
    out.assign(s, strnlen(s, width));
    sum.add_bytes(out.data(), out.size());
  }
  verify_checksum(p[0].ds.get(), p[0].where, sum.value());
}

// A pooled field: each row's elements read through a window of consecutive elements, so rows
// stored in order cost one pass over their data.
template <class Row, class F>
void read_pooled(OpenPart* p, std::vector<Row>& rows, F f) {
  using Elem = PoolElem<Row, F>;
  std::vector<int64_t> offset = read_checked<int64_t>(p[0].ds.get(), p[0].where, p[0].n);
  std::vector<int64_t> length = read_checked<int64_t>(p[1].ds.get(), p[1].where, p[1].n);
  const OpenPart& data = p[2];
  for (size_t i = 0; i < rows.size(); ++i)
    if (offset[i] < 0 || length[i] < 0 || static_cast<uint64_t>(offset[i]) > data.n ||
        static_cast<uint64_t>(length[i]) > data.n - static_cast<uint64_t>(offset[i]))
      throw Failure(p[0].where + " row " + std::to_string(i) + ": elements " + std::to_string(offset[i]) + " + " +
                    std::to_string(length[i]) + " lie outside " + data.where + " (" + std::to_string(data.n) +
                    " elements)");
  const hsize_t span = (hsize_t{8} << 20) / sizeof(Elem);
  std::vector<Elem> window;
  hsize_t lo = 0, hi = 0;
  Checksum sum;
  for (size_t i = 0; i < rows.size(); ++i) {
    const hsize_t at = static_cast<hsize_t>(offset[i]), len = static_cast<hsize_t>(length[i]);
    if (len > 0 && (at < lo || at + len > hi)) {
      lo = at;
      hi = std::min(data.n, std::max(lo + span, at + len));
      window.resize(hi - lo);
      read_range(data.ds.get(), data.where, Num<Elem>::mem(), lo, hi - lo, window.data());
    }
    const Elem* e = len > 0 ? window.data() + (at - lo) : nullptr;
    set_pooled_row(rows[i], f, e, len);
    add_row(sum, e, len);
  }
  verify_checksum(data.ds.get(), data.where, sum.value());
}

template <class Row>
void read_field(OpenPart* p, std::vector<Row>& rows, schema::Pooled<Row> f) {
  read_pooled(p, rows, f);
}
template <class Row>
void read_field(OpenPart* p, std::vector<Row>& rows, std::vector<int64_t> Row::*m) {
  read_pooled(p, rows, m);
}

// ---- reading chosen rows of one field ----

template <class Row, class T>
void read_field_at(OpenPart* p, const std::vector<hsize_t>& at, std::vector<Row>& rows, T Row::*m) {
  std::vector<T> v(at.size());
  read_points(p[0].ds.get(), p[0].where, Num<T>::mem(), at, v.data());
  for (size_t i = 0; i < rows.size(); ++i) rows[i].*m = v[i];
}

template <class Row>
void read_field_at(OpenPart* p, const std::vector<hsize_t>& at, std::vector<Row>& rows, schema::Text<Row> f) {
  Id type(ok(H5Dget_type(p[0].ds.get()), "cannot read " + p[0].where), H5Tclose);
  std::string buf(at.size() * p[0].width, '\0');
  read_points(p[0].ds.get(), p[0].where, type.get(), at, buf.data());
  for (size_t i = 0; i < rows.size(); ++i) {
    const char* s = buf.data() + i * p[0].width;
    (rows[i].*f.member).assign(s, strnlen(s, p[0].width));
  }
}

template <class Row, class F>
void read_pooled_at(OpenPart* p, const std::vector<hsize_t>& at, std::vector<Row>& rows, F f) {
  using Elem = PoolElem<Row, F>;
  std::vector<int64_t> offset(at.size()), length(at.size());
  read_points(p[0].ds.get(), p[0].where, H5T_NATIVE_INT64, at, offset.data());
  read_points(p[1].ds.get(), p[1].where, H5T_NATIVE_INT64, at, length.data());
  for (size_t i = 0; i < rows.size(); ++i) {
    if (offset[i] < 0 || length[i] < 0 || static_cast<uint64_t>(offset[i]) > p[2].n ||
        static_cast<uint64_t>(length[i]) > p[2].n - static_cast<uint64_t>(offset[i]))
      throw Failure(p[0].where + " row " + std::to_string(at[i]) + ": elements lie outside " + p[2].where);
    std::vector<Elem> v(static_cast<size_t>(length[i]));
    read_range(p[2].ds.get(), p[2].where, Num<Elem>::mem(), static_cast<hsize_t>(offset[i]), v.size(), v.data());
    set_pooled_row(rows[i], f, v.data(), v.size());
  }
}

template <class Row>
void read_field_at(OpenPart* p, const std::vector<hsize_t>& at, std::vector<Row>& rows, schema::Pooled<Row> f) {
  read_pooled_at(p, at, rows, f);
}
template <class Row>
void read_field_at(OpenPart* p, const std::vector<hsize_t>& at, std::vector<Row>& rows, std::vector<int64_t> Row::*m) {
  read_pooled_at(p, at, rows, m);
}

}  // namespace detail

template <class Row>
std::vector<Row> read_some_rows(hid_t file, const char* name, const std::vector<schema::Column<Row>>& cols,
                                const std::vector<hsize_t>& rows) {
  Id g = open_group(file, name);
  const std::vector<Part> parts = table_parts(cols);
  std::vector<detail::OpenPart> opened(parts.size());
  for (size_t k = 0; k < parts.size(); ++k) {
    detail::OpenPart& o = opened[k];
    o.where = detail::path_of(name, parts[k].name);
    o.ds = open_dataset(g.get(), o.where, parts[k].name, parts[k].kind, &o.n, &o.width);
    if (!parts[k].pool_data && !rows.empty() && rows.back() >= o.n)
      throw Failure(o.where + " has no row " + std::to_string(rows.back()));
  }
  std::vector<Row> out(rows.size());
  size_t k = 0;
  for (const auto& c : cols) {
    std::visit([&](auto f) { detail::read_field_at(&opened[k], rows, out, f); }, c.field);
    k += parts_of(c).size();
  }
  return out;
}

template <class Row>
std::vector<Part> parts_of(const schema::Column<Row>& c) {
  const std::string n = c.name;
  return std::visit(
      [&](auto f) -> std::vector<Part> {
        using F = decltype(f);
        if constexpr (std::is_same_v<F, schema::Text<Row>>) {
          return {{n, Stored::text}};
        } else if constexpr (detail::is_pooled<Row, F>) {
          const Stored data = std::is_same_v<F, schema::Pooled<Row>> ? Stored::bytes : Stored::integers;
          return {{n + "_offset", Stored::integers}, {n + "_length", Stored::integers}, {n + "_data", data, true}};
        } else {
          using T = typename detail::member_type<F>::type;
          return {{n, std::is_same_v<T, double> ? Stored::floats : Stored::integers}};
        }
      },
      c.field);
}

template <class Row>
TableFile create_table(hid_t file, const char* name, const std::vector<schema::Column<Row>>& cols, int compression) {
  TableFile t;
  t.name = name;
  t.compression = compression;
  t.group = create_group(file, name);
  for (const auto& c : cols) {
    std::visit(
        [&](auto f) {
          using F = decltype(f);
          auto add = [&](const std::string& part, hid_t type, size_t elem, Stored kind, size_t width, bool shuffle,
                         bool pool) {
            DatasetFile d;
            d.name = part;
            d.where = detail::path_of(name, part);
            d.kind = kind;
            d.pool_data = pool;
            d.width = width;
            d.ds = create_dataset(t.group.get(), d.where, part, type, elem, compression, shuffle, pool);
            set_checksum_attribute(d.ds.get(), d.where, d.sum);
            t.datasets.push_back(std::move(d));
          };
          const std::string n = c.name;
          if constexpr (std::is_same_v<F, schema::Text<Row>>) {
            const size_t width = std::max<size_t>(f.width, 1);
            Id type = text_type(width);
            add(n, type.get(), width, Stored::text, width, false, false);
          } else if constexpr (detail::is_pooled<Row, F>) {
            using Elem = detail::PoolElem<Row, F>;
            add(n + "_offset", H5T_STD_I64LE, 8, Stored::integers, 0, true, false);
            add(n + "_length", H5T_STD_I64LE, 8, Stored::integers, 0, true, false);
            add(n + "_data", detail::Num<Elem>::file(), sizeof(Elem), sizeof(Elem) == 1 ? Stored::bytes : Stored::integers,
                0, true, true);
          } else {
            using T = typename detail::member_type<F>::type;
            add(n, detail::Num<T>::file(), sizeof(T), std::is_same_v<T, double> ? Stored::floats : Stored::integers, 0,
                true, false);
          }
        },
        c.field);
  }
  return t;
}

template <class Row>
TableFile open_table(hid_t file, const char* name, const std::vector<schema::Column<Row>>& cols, int compression) {
  TableFile t;
  t.name = name;
  t.compression = compression;
  t.group = open_group(file, name);
  const std::vector<Part> parts = table_parts(cols);
  bool sized = false;
  for (const Part& p : parts) {
    DatasetFile d;
    d.name = p.name;
    d.where = detail::path_of(name, p.name);
    d.kind = p.kind;
    d.pool_data = p.pool_data;
    d.ds = open_dataset(t.group.get(), d.where, p.name, p.kind, &d.length, &d.width, appending_cache_bytes(p.pool_data));
    std::optional<uint64_t> sum = checksum_attribute(d.ds.get(), d.where);
    if (!sum) throw Failure(d.where + " has no kevo_checksum: it was changed by another tool");
    d.sum = *sum;
    if (!p.pool_data) {
      if (sized && d.length != t.rows)
        throw Failure("table /" + std::string(name) + ": " + d.where + " has " + std::to_string(d.length) +
                      " rows but the table " + std::to_string(t.rows));
      sized = true;
      t.rows = d.length;
    }
    t.datasets.push_back(std::move(d));
  }
  return t;
}

template <class Row>
void append_rows(TableFile& t, const std::vector<schema::Column<Row>>& cols, const std::vector<Row>& rows) {
  if (rows.empty()) return;
  size_t k = 0;
  for (const auto& c : cols) {
    std::visit(
        [&](auto f) {
          using F = decltype(f);
          if constexpr (detail::is_pooled<Row, F>) {
            detail::append_pooled(&t.datasets[k], rows, f);
            k += 3;
          } else {
            detail::append_field(t, t.datasets[k], rows, f);
            k += 1;
          }
        },
        c.field);
  }
  t.rows += rows.size();
}

template <class Row>
std::vector<Row> read_table(hid_t file, const char* name, const std::vector<schema::Column<Row>>& cols,
                            const std::vector<std::string>& only) {
  Id g = open_group(file, name);
  // Every dataset is opened and sized before any is read, so a short column is reported as such.
  const std::vector<Part> parts = table_parts(cols);
  std::vector<detail::OpenPart> opened(parts.size());
  bool sized = false;
  hsize_t n = 0;
  std::string sized_by;
  for (size_t k = 0; k < parts.size(); ++k) {
    detail::OpenPart& o = opened[k];
    o.where = detail::path_of(name, parts[k].name);
    o.ds = open_dataset(g.get(), o.where, parts[k].name, parts[k].kind, &o.n, &o.width);
    if (parts[k].pool_data) continue;
    if (!sized) {
      sized = true;
      n = o.n;
      sized_by = o.where;
    } else if (o.n != n) {
      throw Failure("table /" + std::string(name) + ": " + o.where + " has " + std::to_string(o.n) + " rows but " +
                    sized_by + " has " + std::to_string(n));
    }
  }
  std::vector<Row> rows(n);
  size_t k = 0;
  for (const auto& c : cols) {
    const size_t n_parts = parts_of(c).size();
    if (only.empty() || std::find(only.begin(), only.end(), c.name) != only.end())
      std::visit([&](auto f) { detail::read_field(&opened[k], rows, f); }, c.field);
    k += n_parts;
  }
  return rows;
}

template <class T>
std::vector<T> read_number_column(hid_t group, const char* table, const std::string& name) {
  const std::string where = detail::path_of(table, name);
  hsize_t n = 0;
  Id ds = open_dataset(group, where, name, std::is_same_v<T, double> ? Stored::floats : Stored::integers, &n, nullptr);
  return detail::read_checked<T>(ds.get(), where, n);
}

}  // namespace kevo::store::h5
