// Genomes read by knob name: a genome recorded in a file reads as one of today's space, though
// the space has gained a knob since (at the value its manifest says the template had before) or
// lists its knobs in another order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "store/records.h"

namespace kevo::store {

// A space's knobs by name, in the order of its genomes, with the value each takes where a
// recording lacks it (none: the knob was always there).
struct KnobList {
  std::vector<std::string> names;
  std::vector<std::optional<int64_t>> defaults;
};

// The knob names a space record lists ("kThreads,kVec" -> {"kThreads", "kVec"}).
std::vector<std::string> knob_names(const SpaceRecord& s);
// The record of a space: its knobs' names comma-separated.
SpaceRecord space_record(const std::string& task, const std::string& space, const std::vector<std::string>& knobs);

// `values`, recorded with knobs `from` (in the genome's order), as a genome of knobs `to`: each
// knob's value by name, one that `from` lacks at its default. Where `from` is empty (a file of kevo
// before knobs were recorded by name, whose spaces only ever gained knobs at their end) the
// values are the first knobs of `to`, in order. Nullopt where it cannot be read so: a knob of
// `from` that `to` lacks, or one of `to` without a default that `from` lacks.
std::optional<std::vector<int64_t>> read_genome(const std::vector<int64_t>& values,
                                                const std::vector<std::string>& from, const KnobList& to);

}  // namespace kevo::store
