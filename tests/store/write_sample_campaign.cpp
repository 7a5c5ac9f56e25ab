// Writes DIR/sample.h5 (tests/store/sample_campaign.h) and DIR/empty.h5 (no rows at all) for
// read_campaign_h5py.py, which checks them against docs/campaign-file.md with h5py.
#include <cstdio>
#include <exception>
#include <filesystem>

#include "store/campaign_file.h"
#include "tests/store/sample_campaign.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: write_sample_campaign DIR\n");
    return 2;
  }
  try {
    std::filesystem::create_directories(argv[1]);
    const std::string dir = argv[1];
    kevo::store::write_campaign(dir + "/sample.h5", kevo::store::testing::sample_campaign());
    kevo::store::write_campaign(dir + "/empty.h5", kevo::store::CampaignContents{});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "write_sample_campaign: %s\n", e.what());
    return 1;
  }
  return 0;
}
