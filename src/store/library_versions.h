// Versions of the storage libraries kevo links, as text.
#pragma once

#include <string>

namespace kevo::store {

std::string hdf5_version();

}  // namespace kevo::store
