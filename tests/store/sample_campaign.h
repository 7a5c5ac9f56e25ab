// A populated campaign holding the awkward values a campaign file must keep (quotes, newlines,
// UTF-8, empty strings and vectors, extreme integers, NaN and -0.0, binary checkpoints). Shared
// by campaign_file_test.cpp and write_sample_campaign.cpp, whose file read_campaign_h5py.py
// checks: change the values here and the script's expectations together.
#pragma once

#include <cmath>
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "core/sha256.h"
#include "store/records.h"

namespace kevo::store::testing {

inline const char* const kSampleCommand =
    "kevo search --task \"soft max\" --arm 'learned'\n\t--note \xC2\xB5s \xE2\x9C\x93 \xF0\x9F\x9A\x80 \\n";

// A multi-KB candidate text, distinct per `key`.
inline std::string sample_source(int key) {
  std::string s = "// kevo candidate " + std::to_string(key) + " \xE2\x80\x94 \"quoted\" 'single' \\\n";
  s += "/* kevo-plan\n{\"grid\": [" + std::to_string(key) + ", 1, 1], \"block\": [256, 1, 1]}\n*/\n";
  for (int line = 0; line < 120; ++line)
    s += "  acc += x[i * " + std::to_string(line + key) + "] * w[" + std::to_string(line) + "];  // \t step\r\n";
  return s;
}

inline int64_t sample_variant_id(int i) { return 3 * static_cast<int64_t>(i) + 1; }

// `variants` >= 1.
inline CampaignContents sample_campaign(int variants = 40) {
  CampaignContents c;
  c.campaign_id = "5ca1ab1e0123456789abcdef";
  c.kevo_version = "0.1.0";
  c.kevo_commit = "";
  c.created = "2025-01-02T03:04:05Z";
  c.templates_hash = std::string(64, 'f');
  c.command = kSampleCommand;
  c.fitness = "weighted_time_v1";

  const std::string contract = "{\n  \"name\": \"softmax\",\n  \"note\": \"a \\\"quoted\\\" word, \xC3\xA9t\xC3\xA9\"\n}\n";
  c.tasks = {{"softmax", contract, sha256_hex(contract)}, {"layer norm \xE2\x9C\x93", "{}", sha256_hex("{}")}};

  const int64_t i64min = std::numeric_limits<int64_t>::min(), i64max = std::numeric_limits<int64_t>::max();
  c.runs = {{0, "softmax", "random", 0, "{}"},
            {1, "softmax", "learned", std::numeric_limits<uint64_t>::max(), "{\"population\": 64,\n\"islands\": 4}"},
            {-5, "layer norm \xE2\x9C\x93", "sweep", uint64_t{1} << 63, ""}};
  const int32_t run_ids[] = {0, 1, -5};
  const char* const ops[] = {"seed", "point", "multi", "crossover", "space_switch", "reseed", "edit"};
  const double odd_doubles[] = {std::nan(""), -std::numeric_limits<double>::infinity(), -0.0,
                                std::numeric_limits<double>::denorm_min(), 1e300};

  for (int i = 0; i < variants; ++i) {
    VariantRecord v;
    v.id = sample_variant_id(i);
    v.run = run_ids[i % 3];
    v.generation = i / 8;
    v.island = i % 3;
    if (i % 4 != 3) {
      v.space = "reduce/rows \xE2\x80\x94 " + std::to_string(i % 4);
      v.genome = {i, -i, i64min, i64max};
    }
    v.source_hash = sha256_hex(sample_source(i / 2));
    if (i > 0) v.parents.push_back(sample_variant_id(i - 1));
    if (i > 1 && i % 2 == 0) v.parents.push_back(sample_variant_id(i / 2));
    v.op = ops[i % 7];
    v.log_prob = i < 5 ? odd_doubles[i] : -0.125 * i;
    v.duplicate_of = i % 5 == 4 ? sample_variant_id(i - 1) : -1;
    c.variants.push_back(v);

    if (v.duplicate_of != -1) continue;
    MeasurementRecord m;
    m.variant = v.id;
    m.status = i % 3 == 0 ? "ok" : i % 3 == 1 ? "wrong_result" : "unmeasured";
    m.error = m.status == "ok" ? "" : "max error 3.5 > tolerance; \"out\" differs at [0, " + std::to_string(i) + "]";
    if (i == 1) m.error = std::string("ptxas said \0 and stopped", 24);  // pooled text may hold NUL
    m.fitness = m.status == "ok" ? 1.0 + i / 16.0 : 0;
    m.speedup_vs_compile = i * 0.01;
    m.registers = 32 + i;
    m.shared_bytes = 1024 * (i % 5);
    m.spill_bytes = i % 7 == 0 ? 8 : 0;
    m.occupancy = (i % 8) / 8.0;
    m.wall_seconds = 0.5 + i;
    m.gpu_seconds = 1e-3 * i;
    m.gpu = i % 2 ? "NVIDIA H200 (sm_90a)" : "replay:runs/a \"b\".h5";
    for (int w = 0; w < i % 3; ++w)
      m.workloads.push_back({w, w ? "ok" : "timeout", 0.25 * w, 0.5, 12.0 + w, 0.01, 2.0 * w, w * 1e-7});
    c.measurements.push_back(m);
  }

  for (int g = 0; g < 3; ++g) {
    c.generations.push_back({run_ids[g], g, 10 * g, g, 2 * g, 1.5 * g, g == 2 ? -1 : sample_variant_id(std::min(g, variants - 1)), 3.0 * g,
                             0.5 * g, g + 1});
    c.archive.push_back({run_ids[g], g, g % 2, "reduce/rows|" + std::to_string(g) + " \xE2\x89\xA5 0.5",
                         sample_variant_id(std::min(2 * g, variants - 1)), 1.0 + g});
  }

  for (int k = 0; k < (variants + 1) / 2; ++k) c.sources.push_back({sha256_hex(sample_source(k)), sample_source(k)});
  c.sources.push_back({sha256_hex(""), ""});

  std::string all_bytes;
  for (int b = 0; b < 256; ++b) all_bytes.push_back(static_cast<char>(b));
  c.checkpoints = {{1, 0, "policy", all_bytes}, {1, 1, "policy", ""}, {-5, 2, "", std::string(100000, '\0')}};

  const std::string prompt = "[{\"role\":\"system\",\"content\":\"be fast\"},{\"role\":\"user\",\"content\":\"caf\xC3\xA9 \\n\"}]";
  c.llm_samples.push_back({0, run_ids[0], 1, 0, sample_variant_id(0), sample_variant_id(1), prompt,
                           "<<<<<<< SEARCH\r\na\n=======\nb\n>>>>>>> REPLACE\n", "ok", "", "coder", 1234, 56, 2.0});
  c.llm_samples.push_back({1, run_ids[0], 1, 0, sample_variant_id(0), -1, prompt, "no code", "bad_reply",
                           "reply line 1: no SEARCH/REPLACE block", "coder", 0, 3, -1.0});
  c.llm_samples.push_back({2, run_ids[1], 2, 2, -1, -1, "", "", "request_failed", "timeout: after 300 s", "", 0, 0, 0.0});
  c.spaces = {{"softmax", "reduce/rows \xE2\x80\x94 0", "kThreads,kVec,kCache"}, {"softmax", "gemm/linear", "kBM"}};
  return c;
}

}  // namespace kevo::store::testing
