// The resume states of a campaign file (private to src/store): group /resume, datasets state0 and
// state1 (uint8, the search's serialized state) with attributes `generation` (-1: empty) and
// `kevo_checksum`. A generation's state goes to slot generation % 2, so the file always holds the
// states after its last two generations.
#pragma once

#include <hdf5.h>

#include <vector>

#include "store/campaign_file.h"

namespace kevo::store {

// Creates /resume with two empty slots.
void create_resume_slots(hid_t file);
// Replaces the slot of `s.generation` (>= 0).
void write_resume_slot(hid_t file, const ResumeState& s);
// The non-empty slots, checked, oldest first (none when the file has no /resume). Throws h5::Failure.
std::vector<ResumeState> read_resume_slots(hid_t file);

}  // namespace kevo::store
