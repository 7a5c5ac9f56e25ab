// The HDF5 file driver of campaign files: POSIX I/O that makes a file appended to in place commit
// atomically. Between two commit points the bytes the file held at the last one are never
// touched: HDF5's writes past that size go to the file (they are new), its writes below it are
// kept in memory (and read back from there). `commit_journal` is the commit point: the old bytes
// those writes replace are saved to "<path>.journal", then the writes are applied, then the
// journal is emptied. A process killed at any moment leaves the file at its last commit point,
// or leaves a whole journal that `roll_back_journal` (or a reader, without modifying anything)
// uses to return to it. With `durable`, the journal and the file are synced at each step, so a
// power failure does the same. Readers hold a shared lock on the file while open; the commit
// holds an exclusive one only while it overwrites, so a reader sees one commit point throughout.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <string>

namespace kevo::store {

enum class JournalMode {
  write,           // a writer: appends, defers overwrites until commit_journal
  read_committed,  // read-only: the bytes of the last commit point, through a leftover journal
};

// Makes `fapl` open files through the journaling driver in `mode`; `durable`: sync at every
// step of a commit. Throws std::runtime_error.
void use_journal_driver(hid_t fapl, JournalMode mode, bool durable = true);

// The path of the journal of the campaign file at `path`.
std::string journal_path(const std::string& path);

// Restores the file at `path` to its last commit point when a whole journal was left behind,
// removes any journal, and says whether one was applied. The file must not be open for writing.
// Throws std::runtime_error (one line) when the journal cannot be applied; it is then kept.
bool roll_back_journal(const std::string& path);

// The commit point of the file at `path`, open for writing through the driver (call it after
// H5Fflush): what HDF5 wrote since the last one becomes the file's committed state. Throws
// std::runtime_error when a step fails; the file is then at its last commit point, or a whole
// journal takes it back there, and the writer must be closed.
void commit_journal(const std::string& path);

}  // namespace kevo::store
