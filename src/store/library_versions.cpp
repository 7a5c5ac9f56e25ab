// Versions of the storage libraries kevo links (HDF5), for `kevo version` and campaign provenance.
#include "store/library_versions.h"

#include <H5Cpp.h>

namespace kevo::store {

std::string hdf5_version() {
  unsigned major = 0, minor = 0, release = 0;
  H5::H5Library::getLibVersion(major, minor, release);
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release);
}

}  // namespace kevo::store
