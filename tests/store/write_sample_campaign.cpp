// Writes DIR/sample.h5 (tests/store/sample_campaign.h, written whole), DIR/appended.h5 (the same
// campaign appended a generation at a time, with resume states, as the search writes it) and
// DIR/empty.h5 (no rows at all) for read_campaign_h5py.py, which checks them against
// docs/campaign-file.md with h5py.
#include <cstdio>
#include <exception>
#include <filesystem>

#include "store/campaign_file.h"
#include "store/campaign_writer.h"
#include "tests/store/campaign_deltas.h"
#include "tests/store/sample_campaign.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: write_sample_campaign DIR\n");
    return 2;
  }
  try {
    std::filesystem::create_directories(argv[1]);
    const std::string dir = argv[1];
    using namespace kevo::store;
    const CampaignContents c = testing::sample_campaign();
    write_campaign(dir + "/sample.h5", c);
    std::filesystem::remove(dir + "/appended.h5");
    write_campaign(dir + "/appended.h5", testing::head_of(c));
    auto w = CampaignWriter::open(dir + "/appended.h5");
    std::vector<CampaignDelta> deltas = testing::deltas_of(c, 5);
    for (size_t g = 0; g < deltas.size(); ++g) {
      deltas[g].resume = ResumeState{static_cast<int32_t>(g), "state after generation " + std::to_string(g)};
      w->commit(deltas[g]);
    }
    w->close();
    kevo::store::CampaignContents empty;
    empty.fitness = c.fitness;  // what every campaign of this kevo records
    kevo::store::write_campaign(dir + "/empty.h5", empty);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "write_sample_campaign: %s\n", e.what());
    return 1;
  }
  return 0;
}
