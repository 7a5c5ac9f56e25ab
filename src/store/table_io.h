// A campaign table's columns in HDF5 (private to src/store): created empty and extendible, rows
// appended with each dataset's checksum continued, read back whole and checked, or in part (a
// pooled field's chosen rows). A table is a group; each field of its column list lies in one
// dataset (numbers, fixed-width text) or three (a pooled field: <name>_offset, <name>_length,
// <name>_data).
#pragma once

#include <hdf5.h>

#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "store/campaign_schema.h"
#include "store/checksum.h"
#include "store/hdf5_handles.h"

namespace kevo::store::h5 {

// The element kinds a dataset may be required to hold.
enum class Stored { integers, floats, text, bytes };

// One dataset of a table: its name within the table's group and what it holds.
struct Part {
  std::string name;
  Stored kind;
  bool pool_data = false;  // a pooled field's <name>_data: its length is not the table's
};

template <class Row>
std::vector<Part> parts_of(const schema::Column<Row>& c);

// Every dataset of a table, in column order.
template <class Row>
std::vector<Part> table_parts(const std::vector<schema::Column<Row>>& cols) {
  std::vector<Part> out;
  for (const auto& c : cols)
    for (Part& p : parts_of(c)) out.push_back(std::move(p));
  return out;
}

// ---- appending --------------------------------------------------------------------------------

// One dataset of a table open for appending.
struct DatasetFile {
  Id ds;
  std::string name, where;       // "id", "/variants/id"
  Stored kind = Stored::integers;
  bool pool_data = false;        // a pooled field's <name>_data (not one element per row)
  size_t width = 0;              // of fixed-width text
  hsize_t length = 0;            // elements
  uint64_t sum = Checksum::kStart;  // of all its elements, stored as its kevo_checksum attribute
};

// A table open for appending.
struct TableFile {
  std::string name;
  Id group;
  std::vector<DatasetFile> datasets;  // in table_parts order
  hsize_t rows = 0;
  int compression = 6;                // deflate level of datasets created (or rewritten) from now on
};

// Creates the table's group and its datasets, empty.
template <class Row>
TableFile create_table(hid_t file, const char* name, const std::vector<schema::Column<Row>>& cols, int compression);

// Opens a table for appending; its columns must all have one length. Throws Failure.
template <class Row>
TableFile open_table(hid_t file, const char* name, const std::vector<schema::Column<Row>>& cols, int compression);

// Appends `rows` after the table's last row, continuing each dataset's checksum. A text value
// longer than its column rewrites the column wider. Throws Failure for a NUL byte in short text.
template <class Row>
void append_rows(TableFile& t, const std::vector<schema::Column<Row>>& cols, const std::vector<Row>& rows);

// The table's present rows become kept: drop_unkept() goes back to them (the archive's snapshots
// of every tenth generation). Stored in attributes, so it holds across sessions.
void keep(TableFile& t);
// Drops the rows appended since the last keep() (all of them when there was none).
void drop_unkept(TableFile& t);

// ---- reading -----------------------------------------------------------------------------------

// Reads a table whole, every dataset checked against its checksum (a dataset without one is read
// unchecked). `only`: the columns to read (empty: all); the others are checked for their length
// and type only, and left at their default values. Throws Failure.
template <class Row>
std::vector<Row> read_table(hid_t file, const char* name, const std::vector<schema::Column<Row>>& cols,
                            const std::vector<std::string>& only = {});

// Rows `rows` (ascending) of a table, read alone: every column at those rows, checked against
// the chunks' Fletcher-32 checksums (the columns' own would mean reading them whole).
template <class Row>
std::vector<Row> read_some_rows(hid_t file, const char* name, const std::vector<schema::Column<Row>>& cols,
                                const std::vector<hsize_t>& rows);

// The values of pooled text field `field` of rows `rows` (any order), read alone: checked against
// the chunks' Fletcher-32 checksums, not the column's (that would mean reading all of it).
std::vector<std::string> read_pooled_rows(hid_t file, const char* table, const std::string& field,
                                          const std::vector<hsize_t>& rows);

// A column of fixed-width text, checked: `n` values of `width` bytes, NUL-padded, end to end.
struct FixedText {
  size_t width = 0;
  hsize_t n = 0;
  std::string bytes;
  std::string value(hsize_t i) const;
};
FixedText read_text_column(hid_t group, const char* table, const std::string& name);
template <class T>
std::vector<T> read_number_column(hid_t group, const char* table, const std::string& name);

// ---- the untyped steps (table_io.cpp) ----------------------------------------------------------

Id open_group(hid_t file, const std::string& name);
Id create_group(hid_t file, const std::string& name);
// A 1-D extendible dataset of `type` (elem bytes each), chunked, with Fletcher-32 checksums per
// chunk; compressed when `level` > 0. `pool`: a pool's data (larger chunks).
Id create_dataset(hid_t group, const std::string& where, const std::string& name, hid_t type, size_t elem,
                  int level, bool shuffle, bool pool);
// Opens a dataset and checks that it is 1-D and holds `kind`; returns its length and text width.
// `cache_bytes`: its chunk cache (a reader's is large, an appending writer's holds the last chunk
// or two: a writer keeps every table open for a whole campaign).
Id open_dataset(hid_t group, const std::string& where, const std::string& name, Stored kind, hsize_t* length,
                size_t* width, size_t cache_bytes = size_t{4} << 20);
// The chunk cache an appending writer gives a dataset: two of its chunks.
size_t appending_cache_bytes(bool pool);
// Writes `count` elements at `first` (the dataset grows to first + count when shorter).
void write_at(const DatasetFile& d, hid_t mem_type, hsize_t first, hsize_t count, const void* buf);
void read_range(hid_t ds, const std::string& where, hid_t mem_type, hsize_t first, hsize_t count, void* buf);
// Reads the elements at `points` (ascending) into `buf`.
void read_points(hid_t ds, const std::string& where, hid_t mem_type, const std::vector<hsize_t>& points, void* buf);
std::optional<uint64_t> checksum_attribute(hid_t ds, const std::string& where);
void set_checksum_attribute(hid_t ds, const std::string& where, uint64_t sum);
void verify_checksum(hid_t ds, const std::string& where, uint64_t computed);
void set_length(DatasetFile& d, hsize_t length);
// Rewrites a text column `width` bytes wide (its values, and so its checksum, unchanged).
void widen_text(TableFile& t, DatasetFile& d, size_t width);

}  // namespace kevo::store::h5

#include "store/table_io_impl.h"
