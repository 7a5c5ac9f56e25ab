// `kevo version`: kevo's version and the libraries it was built with, and whether a GPU is there.
#include <boost/version.hpp>
#include <Eigen/Core>

#include <iostream>

#include "cli/commands.h"
#include "eval/cuda_driver.h"
#include "eval/oracle.h"
#include "store/library_versions.h"

namespace kevo::cli {

int cmd_version(const std::vector<std::string>& args) {
  if (!args.empty() && args[0] != "--help" && args[0] != "-h") {
    std::cerr << "kevo version: takes no arguments\n";
    return 2;
  }
  std::cout << "kevo " << KEVO_VERSION << "\n"
            << "LibTorch " << eval::torch_version() << "\n"
            << "NVRTC " << eval::nvrtc_version() << "\n"
            << "HDF5 " << store::hdf5_version() << "\n"
            << "Eigen " << EIGEN_WORLD_VERSION << "." << EIGEN_MAJOR_VERSION << "." << EIGEN_MINOR_VERSION << "\n"
            << "Boost " << BOOST_VERSION / 100000 << "." << BOOST_VERSION / 100 % 1000 << "." << BOOST_VERSION % 100
            << "\n";
  const eval::DriverStatus& d = eval::cuda_driver_status();
  if (d.available)
    std::cout << "CUDA driver " << d.version / 1000 << "." << d.version % 1000 / 10 << ", " << d.device_count
              << " GPU" << (d.device_count == 1 ? "" : "s") << "\n";
  else
    std::cout << "CUDA driver: " << d.error << "\n";
  return 0;
}

}  // namespace kevo::cli
